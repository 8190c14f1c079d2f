/* What the mock's kernels do: the reference kernels' work on device memory (vectorAdd) and exact device
 * time (vgpu_spin), the kernel table, and the seeded launch-to-launch variation that keeps block counts
 * from predicting durations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/reference_kernels.h"

#define ELEMENTS 100000
#define THREADS 256

/* ---- vectorAdd ----------------------------------------------------------------------------- */

struct vectors {
    float a[ELEMENTS], b[ELEMENTS], c[ELEMENTS];
    CUdeviceptr device_a, device_b, device_c;
};

/* The first i where c[i] != a[i] + b[i] among the first count, or -1: what a program's own check does. */
static long first_mismatch(const struct vectors *v, long count) {
    for (long i = 0; i < count; i++)
        if (v->c[i] != v->a[i] + v->b[i]) return i;
    return -1;
}

static CUresult vector_add(CUfunction function, struct vectors *v, int elements, unsigned blocks, CUstream stream) {
    void *parameters[] = {&v->device_a, &v->device_b, &v->device_c, &elements};
    return cuLaunchKernel(function, blocks, 1, 1, THREADS, 1, 1, 0, stream, parameters, NULL);
}

static int prepare_vectors(struct vectors *v) {
    unsigned seed = 12345;
    for (int i = 0; i < ELEMENTS; i++) {
        v->a[i] = (float)rand_r(&seed) / (float)RAND_MAX - 0.5f;
        v->b[i] = (float)rand_r(&seed) / (float)RAND_MAX * 100.0f;
    }
    CU_OK(cuMemAlloc_v2(&v->device_a, sizeof v->a));
    CU_OK(cuMemAlloc_v2(&v->device_b, sizeof v->b));
    CU_OK(cuMemAlloc_v2(&v->device_c, sizeof v->c));
    CU_OK(cuMemcpyHtoD_v2(v->device_a, v->a, sizeof v->a));
    CU_OK(cuMemcpyHtoD_v2(v->device_b, v->b, sizeof v->b));
    return 0;
}

int check_mock_reference_kernels(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    static struct vectors v;
    if (prepare_vectors(&v)) return 1;
    CUfunction add, spin, add_binary, add_mangled, other;
    if (load_reference_kernel(&add, MOCK_VECTOR_ADD_KERNEL) || load_reference_kernel(&spin, MOCK_SPIN_KERNEL) ||
        load_test_kernel(&add_binary, MOCK_VECTOR_ADD_KERNEL) || load_test_kernel(&add_mangled, MOCK_VECTOR_ADD_KERNEL_MANGLED) ||
        load_test_kernel(&other, "saxpy"))
        return 1;
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    unsigned blocks = (ELEMENTS + THREADS - 1) / THREADS;

    /* Copy in, kernel, copy out on one stream behind 50 ms of other work: the result is there once the
     * stream is synchronised. */
    CU_OK(cuMemsetD32_v2(v.device_c, 0, ELEMENTS));
    uint64_t began = vgpu_now_ns();
    CU_OK(launch_spin(spin, 50000000ULL, 1, stream));
    CU_OK(cuMemcpyHtoDAsync_v2(v.device_a, v.a, sizeof v.a, stream));
    CU_OK(vector_add(add, &v, ELEMENTS, blocks, stream));
    CU_OK(cuMemcpyDtoHAsync_v2(v.c, v.device_c, sizeof v.c, stream));
    CU_OK(cuStreamSynchronize(stream));
    EXPECT(vgpu_now_ns() - began >= 50000000ULL, "the stream finished before its 50 ms of work");
    EXPECT(first_mismatch(&v, ELEMENTS) == -1, "element %ld of A + B is %g, wanted %g", first_mismatch(&v, ELEMENTS),
           (double)v.c[first_mismatch(&v, ELEMENTS)], (double)(v.a[first_mismatch(&v, ELEMENTS)] + v.b[first_mismatch(&v, ELEMENTS)]));

    /* The kernel reads device memory, not anything else: one corrupted input element shows in exactly
     * that element of the result, and a check of the result finds it. */
    float corrupt = 1000.0f;
    unsigned corrupt_bits;
    memcpy(&corrupt_bits, &corrupt, sizeof corrupt_bits);
    CU_OK(cuMemsetD32_v2(v.device_a + 31337 * sizeof(float), corrupt_bits, 1));
    CU_OK(vector_add(add, &v, ELEMENTS, blocks, NULL));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(first_mismatch(&v, ELEMENTS) == 31337 && v.c[31337] == 1000.0f + v.b[31337],
           "a corrupted A[31337] was not detected: first mismatch %ld", first_mismatch(&v, ELEMENTS));
    CU_OK(cuMemcpyHtoD_v2(v.device_a, v.a, sizeof v.a));

    /* Only the elements the grid reaches: 4 blocks of 256 threads compute 1024 of them. */
    CU_OK(cuMemsetD32_v2(v.device_c, 0x7fc00000u, ELEMENTS)); /* NaN everywhere */
    CU_OK(vector_add(add, &v, ELEMENTS, 4, NULL));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(first_mismatch(&v, 1024) == -1 && isnan(v.c[1024]) && isnan(v.c[ELEMENTS - 1]),
           "4 blocks of 256 threads: mismatch at %ld, c[1024] = %g", first_mismatch(&v, 1024), (double)v.c[1024]);
    /* numElements bounds the work too, and a negative count computes nothing. */
    CU_OK(vector_add(add, &v, 100, blocks, NULL));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(first_mismatch(&v, 1024) == -1 && isnan(v.c[1024]), "numElements 100 wrote past element 1023");
    CU_OK(cuMemsetD32_v2(v.device_c, 0x7fc00000u, ELEMENTS));
    CU_OK(vector_add(add, &v, -5, blocks, NULL));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(isnan(v.c[0]), "numElements -5 computed element 0");

    /* The same kernel from a binary image, under its C++ name, and with its parameters in one buffer. */
    CU_OK(vector_add(add_binary, &v, ELEMENTS, blocks, NULL));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(first_mismatch(&v, ELEMENTS) == -1, "vectorAdd of a binary image: mismatch at %ld", first_mismatch(&v, ELEMENTS));
    CU_OK(cuMemsetD32_v2(v.device_c, 0x7fc00000u, ELEMENTS));
    struct {
        CUdeviceptr a, b, c;
        int elements;
    } packed = {v.device_a, v.device_b, v.device_c, ELEMENTS};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &packed_size, CU_LAUNCH_PARAM_END};
    CU_OK(cuLaunchKernel(add_mangled, blocks, 1, 1, THREADS, 1, 1, 0, NULL, NULL, extra));
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(first_mismatch(&v, ELEMENTS) == -1, "vectorAdd by C++ name with an extra buffer: mismatch at %ld",
           first_mismatch(&v, ELEMENTS));
    packed_size = 24; /* the buffer ends before numElements */
    EXPECT_CU(cuLaunchKernel(add_mangled, blocks, 1, 1, THREADS, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cuLaunchKernel(add, blocks, 1, 1, THREADS, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);

    /* Any other kernel runs no code, whatever it is given. */
    CU_OK(cuMemsetD32_v2(v.device_c, 0x7fc00000u, ELEMENTS));
    CU_OK(vector_add(other, &v, ELEMENTS, blocks, NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyDtoH_v2(v.c, v.device_c, sizeof v.c));
    EXPECT(isnan(v.c[0]) && isnan(v.c[ELEMENTS - 1]), "a kernel that is not a reference kernel wrote memory");

    /* Pointers outside device memory are an illegal address, and the launch takes no device time. */
    CUdeviceptr saved = v.device_c;
    v.device_c = (CUdeviceptr)(uintptr_t)v.c;
    EXPECT_CU(vector_add(add, &v, ELEMENTS, blocks, stream), CUDA_ERROR_ILLEGAL_ADDRESS);
    v.device_c = saved;
    EXPECT_CU(vector_add(add, &v, ELEMENTS + 1, blocks + 1, stream), CUDA_ERROR_ILLEGAL_ADDRESS);
    CU_OK(cuMemFree_v2(v.device_b));
    EXPECT_CU(vector_add(add, &v, ELEMENTS, blocks, stream), CUDA_ERROR_ILLEGAL_ADDRESS);
    CU_OK(cuStreamQuery(stream));
    fprintf(stderr, "  vectorAdd: %d elements through copy in, kernel, copy out; a corrupted input detected\n", ELEMENTS);
    return 0;
}

/* ---- device time --------------------------------------------------------------------------- */

/* VGPU_MOCK_KERNELS=table_kernel=50000, VGPU_MOCK_KERNEL_JITTER=0: every duration is exact. */
int check_mock_virtual_clock(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction table_kernel, plain_kernel, spin;
    if (load_test_kernel(&table_kernel, "table_kernel") || load_test_kernel(&plain_kernel, "plain_kernel") ||
        load_reference_kernel(&spin, MOCK_SPIN_KERNEL))
        return 1;
    CUevent start, stop;
    CU_OK(cuEventCreate(&start, 0));
    CU_OK(cuEventCreate(&stop, 0));
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    /* A 10 ms kernel first: while it runs, the ones below queue up behind it with no gap, so the
     * events measure exactly their virtual time. */
    CU_OK(launch_spin(spin, 10000000ULL, 1, stream));
    uint64_t began = vgpu_now_ns();
    CU_OK(cuEventRecord(start, stream));
    /* The grid does not matter: 1 block or two million, a table kernel takes its 50 us. */
    static const unsigned grids[] = {1, 1000, 100000, 2000000};
    for (int i = 0; i < 100; i++)
        CU_OK(cuLaunchKernel(table_kernel, grids[i % 4], 1, 1, 128, 1, 1, 0, stream, NULL, NULL));
    for (int i = 0; i < 200; i++) CU_OK(launch_spin(spin, 35000ULL, 1 + (unsigned)i * 997 % 5000, stream));
    for (int i = 0; i < 100; i++) /* VGPU_MOCK_KERNEL_NS: 10 us by default */
        CU_OK(cuLaunchKernel(plain_kernel, grids[i % 4], 1, 1, 1024, 1, 1, 0, stream, NULL, NULL));
    CU_OK(cuEventRecord(stop, stream));
    EXPECT_CU(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamSynchronize(stream));
    double waited_ms = (double)(vgpu_now_ns() - began) / 1e6;
    float elapsed = 0;
    CU_OK(cuEventElapsedTime_v2(&elapsed, start, stop));
    EXPECT(elapsed > 12.999f && elapsed < 13.001f,
           "100 table kernels of 50 us + 200 spins of 35 us + 100 kernels of 10 us took %.4f ms, wanted 13.000", elapsed);
    EXPECT(waited_ms >= 12.999, "cuStreamSynchronize returned after %.3f ms, before the work completed", waited_ms);
    EXPECT(waited_ms < 35.0, "cuStreamSynchronize waited %.3f ms for 23 ms of booked work", waited_ms);
    EXPECT_CU(launch_spin(spin, MOCK_SPIN_MAX_NS + 1, 1, stream), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cuLaunchCooperativeKernel(table_kernel, 3457, 1, 1, 1024, 1, 1, 0, stream, NULL),
              CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    EXPECT_CU(cuLaunchKernel(table_kernel, 1, 1, 1, 2048, 1, 1, 0, stream, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    int blocks = 0;
    CU_OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, table_kernel, 256, 0));
    EXPECT(blocks == 8, "occupancy of 256-thread blocks: %d", blocks);
    fprintf(stderr, "  virtual clock: %.4f ms for 400 kernels, synchronize waited %.3f ms\n", elapsed, waited_ms);
    return 0;
}

/* Device time of each of count launches of function, measured with an event after each, queued behind
 * a 100 ms kernel so that nothing but their own durations lies between the events. */
static int measure_durations(CUfunction function, int count, unsigned *grids, uint64_t *durations) {
    CUfunction spin;
    if (load_reference_kernel(&spin, MOCK_SPIN_KERNEL)) return 1;
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUevent *events = calloc((size_t)count + 1, sizeof *events);
    EXPECT(events != NULL, "memory");
    for (int i = 0; i <= count; i++) CU_OK(cuEventCreate(&events[i], 0));
    CU_OK(launch_spin(spin, 100000000ULL, 1, stream));
    CU_OK(cuEventRecord(events[0], stream));
    for (int i = 0; i < count; i++) {
        CU_OK(cuLaunchKernel(function, grids[i], 1, 1, 256, 1, 1, 0, stream, NULL, NULL));
        CU_OK(cuEventRecord(events[i + 1], stream));
    }
    CU_OK(cuStreamSynchronize(stream));
    for (int i = 0; i < count; i++) {
        float milliseconds = 0;
        CU_OK(cuEventElapsedTime_v2(&milliseconds, events[i], events[i + 1]));
        durations[i] = (uint64_t)llround((double)milliseconds * 1e6);
        CU_OK(cuEventDestroy_v2(events[i]));
    }
    CU_OK(cuEventDestroy_v2(events[count]));
    CU_OK(cuStreamDestroy_v2(stream));
    free(events);
    return 0;
}

#define VARIATION_LAUNCHES 2000
#define SEQUENCE_LAUNCHES 40

/* Helper role: the durations of the first launches of a kernel, as one line, under this process's seed. */
int role_kernel_sequence(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction function;
    if (load_test_kernel(&function, "kernel")) return 1;
    unsigned grids[SEQUENCE_LAUNCHES];
    uint64_t durations[SEQUENCE_LAUNCHES];
    for (int i = 0; i < SEQUENCE_LAUNCHES; i++) grids[i] = 1 + (unsigned)i * 7919;
    if (measure_durations(function, SEQUENCE_LAUNCHES, grids, durations)) return 1;
    for (int i = 0; i < SEQUENCE_LAUNCHES; i++) printf("%s%llu", i > 0 ? "," : "", (unsigned long long)durations[i]);
    printf("\n");
    return 0;
}

static int sequence_with_seed(const char *seed, char *line, size_t size) {
    int output = -1;
    const char *environment[] = {seed, NULL};
    pid_t child = spawn_self_with("kernel-sequence", NULL, environment, &output);
    EXPECT(child > 0 && output >= 0, "started the kernel-sequence role");
    FILE *stream = fdopen(output, "r");
    bool read_it = stream != NULL && fgets(line, (int)size, stream) != NULL;
    if (stream != NULL) fclose(stream);
    EXPECT(wait_child(child) == 0 && read_it, "the kernel-sequence role with %s failed", seed);
    return 0;
}

/* Default variation (50%) and VGPU_MOCK_KERNELS=wide=40000: durations spread around their mean,
 * unrelated to the grid, and a seed repeats them exactly. */
int check_mock_kernel_variation(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction plain, wide;
    if (load_test_kernel(&plain, "kernel") || load_test_kernel(&wide, "wide")) return 1;
    static unsigned grids[VARIATION_LAUNCHES];
    static uint64_t durations[VARIATION_LAUNCHES];
    unsigned seed = 99;
    for (int i = 0; i < VARIATION_LAUNCHES; i++) grids[i] = 1 + (unsigned)rand_r(&seed) % 1000000;
    if (measure_durations(plain, VARIATION_LAUNCHES, grids, durations)) return 1;
    double sum = 0, sum_squares = 0, sum_grid = 0, sum_grid_squares = 0, sum_product = 0;
    uint64_t shortest = UINT64_MAX, longest = 0;
    for (int i = 0; i < VARIATION_LAUNCHES; i++) {
        double d = (double)durations[i], g = (double)grids[i];
        sum += d, sum_squares += d * d, sum_grid += g, sum_grid_squares += g * g, sum_product += d * g;
        if (durations[i] < shortest) shortest = durations[i];
        if (durations[i] > longest) longest = durations[i];
    }
    double n = VARIATION_LAUNCHES, mean = sum / n;
    double deviation = sqrt(sum_squares / n - mean * mean);
    double covariance = sum_product / n - mean * sum_grid / n;
    double correlation = covariance / (deviation * sqrt(sum_grid_squares / n - (sum_grid / n) * (sum_grid / n)));
    fprintf(stderr, "  10 us kernels: %.0f ns mean, %.0f ns deviation, %llu..%llu ns, correlation with blocks %.3f\n", mean,
            deviation, (unsigned long long)shortest, (unsigned long long)longest, correlation);
    EXPECT(shortest >= 5000 && longest <= 15000, "durations %llu..%llu ns, wanted within 10 us +-50%%",
           (unsigned long long)shortest, (unsigned long long)longest);
    EXPECT(mean > 9700 && mean < 10300, "mean %.0f ns, wanted 10000 +-3%%", mean);
    EXPECT(deviation > 2500 && deviation < 3300, "deviation %.0f ns, wanted about 2887 (uniform +-50%%)", deviation);
    EXPECT(fabs(correlation) < 0.1, "durations follow the block count (correlation %.3f)", correlation);

    if (measure_durations(wide, 500, grids, durations)) return 1;
    double wide_sum = 0;
    for (int i = 0; i < 500; i++) wide_sum += (double)durations[i];
    EXPECT(wide_sum / 500 > 38500 && wide_sum / 500 < 41500, "kernel \"wide\" of the table: mean %.0f ns, wanted 40000",
           wide_sum / 500);

    char first[1024], again[1024], other[1024];
    if (sequence_with_seed("VGPU_MOCK_SEED=7", first, sizeof first) || sequence_with_seed("VGPU_MOCK_SEED=7", again, sizeof again) ||
        sequence_with_seed("VGPU_MOCK_SEED=8", other, sizeof other))
        return 1;
    EXPECT(strcmp(first, again) == 0, "seed 7 gave two sequences:\n%s%s", first, again);
    EXPECT(strcmp(first, other) != 0, "seeds 7 and 8 gave the same sequence %s", first);
    return 0;
}

/* Helper role: cuInit's result, with the mock's log line if any, then how long 100 launches of a kernel
 * the table does not list took on the device clock (vgpu_spin keeps its own duration when launches are free). */
int role_kernel_config(int argc, char **argv) {
    (void)argc, (void)argv;
    dup2(STDOUT_FILENO, STDERR_FILENO);
    CUresult result = cuInit(0);
    printf("cuInit %d\n", (int)result);
    if (result != CUDA_SUCCESS) return 0;
    CUcontext context;
    CUfunction function, spin;
    CUevent start, stop;
    if (setup_primary_context(&context) || load_test_kernel(&function, "kernel") || load_reference_kernel(&spin, MOCK_SPIN_KERNEL))
        return 1;
    CU_OK(cuEventCreate(&start, 0));
    CU_OK(cuEventCreate(&stop, 0));
    CU_OK(launch_spin(spin, 50000000ULL, 1, NULL)); /* the launches below queue behind it, without gaps */
    CU_OK(cuEventRecord(start, NULL));
    for (int i = 0; i < 100; i++) CU_OK(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CU_OK(cuEventRecord(stop, NULL));
    CU_OK(cuEventSynchronize(stop));
    float milliseconds = 0;
    CU_OK(cuEventElapsedTime_v2(&milliseconds, start, stop));
    printf("elapsed %.3f\n", (double)milliseconds);
    return 0;
}

/* The kernel-cost variables: a bad value is one line naming it and cuInit fails (CUDA_ERROR_NO_DEVICE);
 * VGPU_MOCK_WAVE_NS, the earlier name of VGPU_MOCK_KERNEL_NS, still makes launches free with 0. */
int check_mock_kernel_config(int argc, char **argv) {
    (void)argc, (void)argv;
    static const char *const cases[][3] = {
        {"VGPU_MOCK_KERNELS=vgpu_spin=5", NULL, "VGPU_MOCK_KERNELS entry \"vgpu_spin=5\": vgpu_spin takes its duration"},
        {"VGPU_MOCK_KERNELS=a=1, a=2", NULL, "VGPU_MOCK_KERNELS names kernel \"a\" twice"},
        {"VGPU_MOCK_KERNELS=a", NULL, "VGPU_MOCK_KERNELS entry \"a\" is not name=nanoseconds"},
        {"VGPU_MOCK_KERNELS=a=1x", NULL, "VGPU_MOCK_KERNELS entry \"a=1x\": \"1x\" is not a number of nanoseconds"},
        {"VGPU_MOCK_KERNELS=a b=1", NULL, "\"a b\" is not a kernel name"},
        {"VGPU_MOCK_KERNEL_NS=1", "VGPU_MOCK_WAVE_NS=0", "VGPU_MOCK_KERNEL_NS=1 and VGPU_MOCK_WAVE_NS=0 are both set"},
        {"VGPU_MOCK_KERNEL_JITTER=101", NULL, "VGPU_MOCK_KERNEL_JITTER=101 is not a number in 0..100"},
        {"VGPU_MOCK_SEED=-1", NULL, "VGPU_MOCK_SEED=-1 is not a number"},
        {"VGPU_MOCK_WAVE_NS=0", NULL, "cuInit 0\nelapsed 0.000\n"},
        {"VGPU_MOCK_KERNEL_NS=20000", "VGPU_MOCK_KERNEL_JITTER=0", "cuInit 0\nelapsed 2.000\n"},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *environment[] = {cases[i][0], cases[i][1], NULL};
        int output = -1;
        pid_t child = spawn_self_with("kernel-config", NULL, environment, &output);
        EXPECT(child > 0, "started the kernel-config role");
        char text[2048] = "";
        size_t used = 0;
        ssize_t got;
        while (used + 1 < sizeof text && (got = read(output, text + used, sizeof text - used - 1)) > 0) used += (size_t)got;
        text[used] = '\0';
        close(output);
        EXPECT(wait_child(child) == 0, "the kernel-config role with %s failed: %s", cases[i][0], text);
        bool refused = strstr(cases[i][2], "cuInit 0") == NULL;
        if (refused) {
            EXPECT(strstr(text, cases[i][2]) != NULL && strstr(text, "cuInit 100\n") != NULL &&
                       strchr(text, '\n') == strstr(text, "cuInit 100\n") - 1,
                   "%s %s: wanted one line naming \"%s\" and cuInit 100, got:\n%s", cases[i][0], cases[i][1] ? cases[i][1] : "",
                   cases[i][2], text);
        } else {
            EXPECT(strcmp(text, cases[i][2]) == 0, "%s %s: got\n%s", cases[i][0], cases[i][1] ? cases[i][1] : "", text);
        }
    }
    return 0;
}
