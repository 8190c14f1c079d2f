/* Mock driver: what one kernel launch does. Its device time comes from the kernel, never from its
 * grid: vgpu_spin takes exactly what its argument asks for; every other kernel takes the mean of its
 * name (VGPU_MOCK_KERNELS, else VGPU_MOCK_KERNEL_NS) varied per launch by up to
 * VGPU_MOCK_KERNEL_JITTER percent, drawn from a sequence seeded by VGPU_MOCK_SEED. So neither block
 * nor thread counts predict a duration, as on a GPU, where they depend on the work.
 *
 * The reference kernels (reference_kernels.h) also do their work, at once, on the host memory behind
 * the device pointers they are given: the launch follows everything the program enqueued before it,
 * so a later copy or synchronisation sees the result, in virtual time order or earlier. */
#include <stdlib.h>
#include <string.h>

#include "mock/cuda_internal.h"
#include "mock/reference_kernels.h"

#define MAX_PARAMETERS 4

struct mock_reference_kernel {
    const char *name;
    const char *mangled_name;
    unsigned parameter_count;
    size_t parameter_sizes[MAX_PARAMETERS];
    /* Checks the decoded parameters, does the work and sets the device time; mean_ns is the table's. */
    CUresult (*run)(const struct mock_kernel_geometry *geometry, void *const *parameters, uint64_t mean_ns,
                    uint64_t *duration_ns);
};

static uint64_t jittered(uint64_t mean_ns);

/* ---- the reference kernels ----------------------------------------------------------------- */

static CUresult vector_add(const struct mock_kernel_geometry *geometry, void *const *parameters, uint64_t mean_ns,
                           uint64_t *duration_ns) {
    CUdeviceptr a = 0, b = 0, c = 0;
    int elements = 0;
    memcpy(&a, parameters[0], sizeof a);
    memcpy(&b, parameters[1], sizeof b);
    memcpy(&c, parameters[2], sizeof c);
    memcpy(&elements, parameters[3], sizeof elements);
    /* Thread i = blockDim.x * blockIdx.x + threadIdx.x handles element i; the sample uses x only. */
    uint64_t threads = (uint64_t)geometry->grid[0] * geometry->block[0];
    size_t count = elements <= 0 ? 0 : (uint64_t)elements < threads ? (size_t)elements : (size_t)threads;
    size_t bytes = count * sizeof(float);
    if (!mock_device_range_valid(a, bytes) || !mock_device_range_valid(b, bytes) || !mock_device_range_valid(c, bytes))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    const float *in_a = (const float *)(uintptr_t)a, *in_b = (const float *)(uintptr_t)b;
    float *out = (float *)(uintptr_t)c;
    for (size_t i = 0; i < count; i++) out[i] = in_a[i] + in_b[i];
    *duration_ns = jittered(mean_ns);
    return CUDA_SUCCESS;
}

static CUresult spin(const struct mock_kernel_geometry *geometry, void *const *parameters, uint64_t mean_ns,
                     uint64_t *duration_ns) {
    (void)geometry, (void)mean_ns;
    unsigned long long nanoseconds = 0;
    memcpy(&nanoseconds, parameters[0], sizeof nanoseconds);
    if (nanoseconds > MOCK_SPIN_MAX_NS) return CUDA_ERROR_INVALID_VALUE;
    *duration_ns = nanoseconds;
    return CUDA_SUCCESS;
}

static const struct mock_reference_kernel REFERENCE_KERNELS[] = {
    {MOCK_VECTOR_ADD_KERNEL, MOCK_VECTOR_ADD_KERNEL_MANGLED, 4,
     {sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(CUdeviceptr), sizeof(int)}, vector_add},
    {MOCK_SPIN_KERNEL, NULL, 1, {sizeof(unsigned long long)}, spin},
};

const struct mock_reference_kernel *mock_reference_kernel_named(const char *name) {
    for (unsigned i = 0; i < sizeof REFERENCE_KERNELS / sizeof REFERENCE_KERNELS[0]; i++) {
        const struct mock_reference_kernel *kernel = &REFERENCE_KERNELS[i];
        if (strcmp(kernel->name, name) == 0 || (kernel->mangled_name != NULL && strcmp(kernel->mangled_name, name) == 0))
            return kernel;
    }
    return NULL;
}

/* ---- parameters ---------------------------------------------------------------------------- */

/* Points parameters[i] at the value of parameter i: kernelParams as given, or inside the buffer that
 * extra passes (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE), each value at its natural alignment. */
static CUresult locate_parameters(const struct mock_reference_kernel *kernel, void **kernelParams, void **extra,
                                  void *parameters[MAX_PARAMETERS]) {
    if (kernelParams != NULL) {
        for (unsigned i = 0; i < kernel->parameter_count; i++) {
            if (kernelParams[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
            parameters[i] = kernelParams[i];
        }
        return CUDA_SUCCESS;
    }
    char *buffer = NULL;
    size_t buffer_size = 0;
    bool sized = false;
    for (unsigned i = 0; extra != NULL && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            buffer = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL) {
            memcpy(&buffer_size, extra[i + 1], sizeof buffer_size);
            sized = true;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (buffer == NULL || !sized) return CUDA_ERROR_INVALID_VALUE;
    size_t offset = 0;
    for (unsigned i = 0; i < kernel->parameter_count; i++) {
        size_t size = kernel->parameter_sizes[i];
        offset = (offset + size - 1) / size * size;
        if (offset + size > buffer_size) return CUDA_ERROR_INVALID_VALUE;
        parameters[i] = buffer + offset;
        offset += size;
    }
    return CUDA_SUCCESS;
}

/* ---- device time --------------------------------------------------------------------------- */

static _Atomic uint64_t launch_sequence;

/* SplitMix64: a well-mixed 64-bit value per launch number. */
static uint64_t mix(uint64_t value) {
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
}

/* mean x (1 + jitter x u), u uniform in [-1, 1): the n-th launch of this process draws the n-th value
 * of the sequence VGPU_MOCK_SEED starts, so a run repeats exactly. */
static uint64_t jittered(uint64_t mean_ns) {
    unsigned jitter = mock_driver.config->kernel_jitter_percent;
    if (mean_ns == 0 || jitter == 0) return mean_ns;
    uint64_t launch = atomic_fetch_add_explicit(&launch_sequence, 1, memory_order_relaxed) + 1;
    uint64_t random = mix(mock_driver.config->seed + launch * 0x9e3779b97f4a7c15ULL);
    double u = (double)(random >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    return (uint64_t)((double)mean_ns * (1.0 + (double)jitter / 100.0 * u) + 0.5);
}

CUresult mock_kernel_run(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                         void **kernelParams, void **extra, uint64_t *duration_ns) {
    const struct mock_reference_kernel *kernel = function->reference;
    if (kernel == NULL) {
        *duration_ns = jittered(function->mean_ns);
        return CUDA_SUCCESS;
    }
    void *parameters[MAX_PARAMETERS] = {NULL};
    CUresult result = locate_parameters(kernel, kernelParams, extra, parameters);
    return result == CUDA_SUCCESS ? kernel->run(geometry, parameters, function->mean_ns, duration_ns) : result;
}

/* ---- parameters kept by graph nodes -------------------------------------------------------- */

struct mock_kernel_arguments *mock_kernel_arguments_copy(const struct mock_function *function, void **kernelParams,
                                                         void **extra, CUresult *result) {
    *result = CUDA_SUCCESS;
    const struct mock_reference_kernel *kernel = function->reference;
    if (kernel == NULL) return NULL; /* runs no code: its parameters are never read */
    void *parameters[MAX_PARAMETERS] = {NULL};
    if ((*result = locate_parameters(kernel, kernelParams, extra, parameters)) != CUDA_SUCCESS) return NULL;
    size_t values = 0;
    for (unsigned i = 0; i < kernel->parameter_count; i++) values += kernel->parameter_sizes[i];
    size_t bytes = sizeof(struct mock_kernel_arguments) + values;
    struct mock_kernel_arguments *copy = calloc(1, bytes);
    if (copy == NULL) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    copy->bytes = bytes;
    copy->count = kernel->parameter_count;
    size_t offset = 0;
    for (unsigned i = 0; i < kernel->parameter_count; i++) {
        copy->pointers[i] = copy->values + offset;
        memcpy(copy->values + offset, parameters[i], kernel->parameter_sizes[i]);
        offset += kernel->parameter_sizes[i];
    }
    return copy;
}

struct mock_kernel_arguments *mock_kernel_arguments_clone(const struct mock_kernel_arguments *arguments) {
    if (arguments == NULL) return NULL;
    struct mock_kernel_arguments *copy = malloc(arguments->bytes);
    if (copy == NULL) return NULL;
    memcpy(copy, arguments, arguments->bytes);
    for (unsigned i = 0; i < copy->count; i++)
        copy->pointers[i] = copy->values + ((const unsigned char *)arguments->pointers[i] - arguments->values);
    return copy;
}
