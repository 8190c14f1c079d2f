/* The probe's driver-API ops: info, alloc, fill, compute and vectoradd. Each device it touches gets its
 * primary context, retained for the life of the process, and the reference kernels' module
 * (MOCK_REFERENCE_PTX: real PTX, so the ops also run on a GPU). Nothing allocated is ever freed,
 * except vectoradd's own buffers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "cuda_api.h"
#include "mock/reference_kernels.h"
#include "probe/probe.h"

#define MIB (1ULL << 20)
#define FILL_CHUNK_MIB 64
#define COMPUTE_KERNEL_NS 1000000ULL /* compute launches 1 ms kernels */
#define COMPUTE_IN_FLIGHT 8          /* kernels queued at most: busy through short scheduling delays, no backlog */
#define VECTOR_ELEMENTS 50000        /* as NVIDIA's vectorAdd sample */
#define VECTOR_THREADS_PER_BLOCK 256

struct device {
    bool ready;
    CUcontext context;
    CUmodule module;
};

static struct device devices[16];

static CUresult driver_ready(void) {
    static bool attempted;
    static CUresult result;
    if (!attempted) {
        attempted = true;
        result = cuInit(0);
        if (result != CUDA_SUCCESS) probe_note("cuInit returned %d", (int)result);
    }
    return result;
}

/* Makes ordinal's primary context current, retaining it the first time. */
static CUresult use_device(int ordinal) {
    CUresult result = driver_ready();
    if (result != CUDA_SUCCESS) return result;
    struct device *device = &devices[ordinal];
    if (!device->ready) {
        CUdevice handle = 0;
        if ((result = cuDeviceGet(&handle, ordinal)) != CUDA_SUCCESS ||
            (result = cuDevicePrimaryCtxRetain(&device->context, handle)) != CUDA_SUCCESS)
            return result;
        device->ready = true;
    }
    return cuCtxSetCurrent(device->context);
}

/* A reference kernel on ordinal's context. */
static CUresult reference_kernel(int ordinal, const char *name, CUfunction *function) {
    CUresult result = use_device(ordinal);
    if (result != CUDA_SUCCESS) return result;
    struct device *device = &devices[ordinal];
    if (device->module == NULL && (result = cuModuleLoadData(&device->module, MOCK_REFERENCE_PTX)) != CUDA_SUCCESS) {
        device->module = NULL;
        return result;
    }
    return cuModuleGetFunction(function, device->module, name);
}

void probe_info(void) {
    char list[4096] = "", uuid_text[VGPU_UUID_TEXT_LENGTH + 1];
    size_t used = 0;
    int count = 0;
    CUresult result = driver_ready();
    if (result == CUDA_SUCCESS) result = cuDeviceGetCount(&count);
    for (int ordinal = 0; ordinal < count && ordinal < 16 && result == CUDA_SUCCESS; ordinal++) {
        CUuuid uuid;
        size_t free_bytes = 0, total = 0;
        if ((result = use_device(ordinal)) != CUDA_SUCCESS || (result = cuDeviceGetUuid_v2(&uuid, ordinal)) != CUDA_SUCCESS ||
            (result = cuMemGetInfo_v2(&free_bytes, &total)) != CUDA_SUCCESS)
            break;
        vgpu_uuid_format((const unsigned char *)uuid.bytes, uuid_text);
        used += (size_t)snprintf(list + used, sizeof list - used,
                                 "%s{\"ordinal\":%d,\"uuid\":\"%s\",\"totalMiB\":%llu,\"freeMiB\":%llu}",
                                 ordinal > 0 ? "," : "", ordinal, uuid_text, (unsigned long long)(total / MIB),
                                 (unsigned long long)(free_bytes / MIB));
    }
    if (result != CUDA_SUCCESS) probe_note("info: driver call returned %d", (int)result);
    probe_emit("\"op\":\"info\",\"result\":%d,\"devices\":[%s]", (int)result, list);
}

void probe_alloc(const struct probe_op *op) {
    CUdeviceptr pointer = 0;
    CUresult result = use_device(op->ordinal);
    if (result == CUDA_SUCCESS) result = cuMemAlloc_v2(&pointer, op->size_mib * MIB);
    probe_emit("\"op\":\"alloc\",\"sizeMiB\":%llu,\"ordinal\":%d,\"result\":%d", (unsigned long long)op->size_mib,
               op->ordinal, (int)result);
}

void probe_fill(const struct probe_op *op) {
    uint64_t held = 0;
    CUresult result = use_device(op->ordinal);
    while (result == CUDA_SUCCESS) {
        CUdeviceptr pointer = 0;
        result = cuMemAlloc_v2(&pointer, FILL_CHUNK_MIB * MIB);
        if (result == CUDA_SUCCESS) held += FILL_CHUNK_MIB;
    }
    if (result != CUDA_ERROR_OUT_OF_MEMORY) probe_note("fill@%d: stopped by result %d", op->ordinal, (int)result);
    probe_emit("\"op\":\"fill\",\"heldMiB\":%llu", (unsigned long long)held);
}

/* Back-to-back 1 ms vgpu_spin kernels for op->seconds of wall time, at most COMPUTE_IN_FLIGHT queued.
 * Each kernel takes exactly 1 ms of the device clock however long it waited behind other work, so
 * kernels x 1 ms is this process's device time, and over the op's wall time its utilization. */
void probe_compute(const struct probe_op *op) {
    CUfunction spin = NULL;
    CUstream stream = NULL;
    CUevent ring[COMPUTE_IN_FLIGHT] = {NULL};
    uint64_t kernels = 0;
    CUresult result = reference_kernel(op->ordinal, MOCK_SPIN_KERNEL, &spin);
    if (result == CUDA_SUCCESS) result = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < COMPUTE_IN_FLIGHT && result == CUDA_SUCCESS; i++) result = cuEventCreate(&ring[i], CU_EVENT_DISABLE_TIMING);
    unsigned long long nanoseconds = COMPUTE_KERNEL_NS;
    void *parameters[] = {&nanoseconds};
    uint64_t start = vgpu_now_ns(), deadline = start + (uint64_t)(op->seconds * 1e9);
    while (result == CUDA_SUCCESS && vgpu_now_ns() < deadline) {
        CUevent slot = ring[kernels % COMPUTE_IN_FLIGHT];
        if (kernels >= COMPUTE_IN_FLIGHT && (result = cuEventSynchronize(slot)) != CUDA_SUCCESS) break;
        if ((result = cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL)) != CUDA_SUCCESS ||
            (result = cuEventRecord(slot, stream)) != CUDA_SUCCESS)
            break;
        kernels++;
    }
    if (stream != NULL && cuStreamSynchronize(stream) != CUDA_SUCCESS) kernels = 0;
    uint64_t wall = vgpu_now_ns() - start;
    for (int i = 0; i < COMPUTE_IN_FLIGHT; i++)
        if (ring[i] != NULL) cuEventDestroy_v2(ring[i]);
    if (stream != NULL) cuStreamDestroy_v2(stream);
    if (result != CUDA_SUCCESS) probe_note("compute@%d: driver call returned %d after %llu kernels", op->ordinal, (int)result,
                                           (unsigned long long)kernels);
    double percent = wall > 0 ? 100.0 * (double)(kernels * COMPUTE_KERNEL_NS) / (double)wall : 0.0;
    probe_emit("\"op\":\"compute\",\"utilizationPercent\":%.1f", percent);
}

/* NVIDIA's vectorAdd sample over the driver API: copy in, kernel, copy out on one stream, verify. */
static bool vector_add(void) {
    size_t bytes = VECTOR_ELEMENTS * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = calloc(VECTOR_ELEMENTS, sizeof(float));
    CUdeviceptr device_a = 0, device_b = 0, device_c = 0;
    CUstream stream = NULL;
    CUfunction function = NULL;
    bool passed = false;
    if (a == NULL || b == NULL || c == NULL) goto done;
    unsigned seed = 20240601u;
    for (int i = 0; i < VECTOR_ELEMENTS; i++) {
        a[i] = 0.5f + (float)rand_r(&seed) / (float)RAND_MAX;
        b[i] = 0.5f + (float)rand_r(&seed) / (float)RAND_MAX;
    }
    int elements = VECTOR_ELEMENTS;
    void *parameters[] = {&device_a, &device_b, &device_c, &elements};
    unsigned blocks = (VECTOR_ELEMENTS + VECTOR_THREADS_PER_BLOCK - 1) / VECTOR_THREADS_PER_BLOCK;
    CUresult result = reference_kernel(0, MOCK_VECTOR_ADD_KERNEL, &function);
    if (result == CUDA_SUCCESS) result = cuMemAlloc_v2(&device_a, bytes);
    if (result == CUDA_SUCCESS) result = cuMemAlloc_v2(&device_b, bytes);
    if (result == CUDA_SUCCESS) result = cuMemAlloc_v2(&device_c, bytes);
    if (result == CUDA_SUCCESS) result = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (result == CUDA_SUCCESS) result = cuMemcpyHtoDAsync_v2(device_a, a, bytes, stream);
    if (result == CUDA_SUCCESS) result = cuMemcpyHtoDAsync_v2(device_b, b, bytes, stream);
    if (result == CUDA_SUCCESS)
        result = cuLaunchKernel(function, blocks, 1, 1, VECTOR_THREADS_PER_BLOCK, 1, 1, 0, stream, parameters, NULL);
    if (result == CUDA_SUCCESS) result = cuMemcpyDtoHAsync_v2(c, device_c, bytes, stream);
    if (result == CUDA_SUCCESS) result = cuStreamSynchronize(stream);
    if (result != CUDA_SUCCESS) {
        probe_note("vectoradd: driver call returned %d", (int)result);
        goto done;
    }
    passed = true;
    for (int i = 0; i < VECTOR_ELEMENTS && passed; i++) {
        if (fabsf(a[i] + b[i] - c[i]) > 1e-5f) {
            probe_note("vectoradd: element %d is %g, wanted %g + %g", i, (double)c[i], (double)a[i], (double)b[i]);
            passed = false;
        }
    }
done:
    if (stream != NULL) cuStreamDestroy_v2(stream);
    if (device_a != 0) cuMemFree_v2(device_a);
    if (device_b != 0) cuMemFree_v2(device_b);
    if (device_c != 0) cuMemFree_v2(device_c);
    free(a);
    free(b);
    free(c);
    return passed;
}

void probe_vectoradd(void) { probe_emit("\"op\":\"vectoradd\",\"passed\":%s", vector_add() ? "true" : "false"); }
