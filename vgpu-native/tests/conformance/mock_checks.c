/* The mock libcuda.so.1 on its own: lazily backed device memory and a sweep over the rest of the driver
 * surface a plain driver-API program uses (its kernels: kernel_checks.c). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"

static long resident_mib(void) {
    FILE *statm = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (statm == NULL) return -1;
    if (fscanf(statm, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(statm);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE) / (1024 * 1024);
}

/* VGPU_MOCK_CONFIG=H200: 140 GiB of device memory on a machine that has far less. */
int check_mock_lazy_memory(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t free_bytes = 0, total = 0;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    EXPECT(total == 143771 * MIB, "H200 total %zu", total);
    CUdeviceptr big = 0, more = 0;
    CU_OK(cuMemAlloc_v2(&big, 140 * GIB));
    char pattern[4096], back[4096];
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (char)(i * 7);
    CU_OK(cuMemcpyHtoD_v2(big, pattern, sizeof pattern));
    CU_OK(cuMemcpyHtoD_v2(big + 140 * GIB - sizeof pattern, pattern, sizeof pattern));
    CU_OK(cuMemcpyDtoH_v2(back, big + 140 * GIB - sizeof pattern, sizeof back));
    EXPECT(memcmp(pattern, back, sizeof back) == 0, "data survives a round trip at the far end of 140 GiB");
    long resident = resident_mib();
    EXPECT(resident >= 0 && resident < 256, "resident memory %ld MiB with 140 GiB allocated", resident);
    EXPECT_CU(cuMemAlloc_v2(&more, GIB), CUDA_ERROR_OUT_OF_MEMORY); /* the device's own budget */
    CU_OK(cuMemFree_v2(big));
    CU_OK(cuMemAlloc_v2(&more, GIB));
    CU_OK(cuMemFree_v2(more));
    fprintf(stderr, "  140 GiB allocated on a mock H200 with %ld MiB resident\n", resident);
    return 0;
}

/* Everything else a driver-API program typically touches, each result checked. */
int check_mock_driver_surface(int argc, char **argv) {
    (void)argc, (void)argv;
    int version = 0;
    CU_OK(cuDriverGetVersion(&version));
    EXPECT(version == 13000, "driver version %d", version);
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, 1), CUDA_ERROR_NOT_INITIALIZED);
    const char *text = NULL;
    CU_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
    EXPECT(strcmp(text, "CUDA_ERROR_OUT_OF_MEMORY") == 0, "name %s", text);
    CU_OK(cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &text));
    EXPECT_CU(cuGetErrorString((CUresult)12345, &text), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuInit(0));
    CUdevice device = -1;
    EXPECT_CU(cuDeviceGet(&device, 7), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuDeviceGet(&device, 0));
    EXPECT_CU(cuMemAlloc_v2(&pointer, 1), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext first, second, popped;
    CU_OK(cuCtxCreate_v2(&first, CU_CTX_SCHED_BLOCKING_SYNC, device));
    CU_OK(cuCtxCreate_v2(&second, 0, device));
    CU_OK(cuCtxPopCurrent_v2(&popped));
    EXPECT(popped == second, "pop returns the last context");
    CU_OK(cuCtxGetCurrent(&popped));
    EXPECT(popped == first, "the stack below comes back");
    CU_OK(cuCtxPushCurrent_v2(second));
    unsigned flags = 0, api = 0;
    CU_OK(cuCtxSetCurrent(first));
    CU_OK(cuCtxGetFlags(&flags));
    EXPECT(flags == CU_CTX_SCHED_BLOCKING_SYNC, "flags %u", flags);
    CU_OK(cuCtxGetApiVersion(first, &api));
    size_t limit = 0;
    CU_OK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 16 * MIB));
    CU_OK(cuCtxGetLimit(&limit, CU_LIMIT_MALLOC_HEAP_SIZE));
    EXPECT(limit == 16 * MIB, "heap limit %zu", limit);
    EXPECT_CU(cuMemAlloc_v2(&pointer, 0), CUDA_ERROR_INVALID_VALUE);

    /* Copies through device, host, pitched and array memory. */
    enum { W = 64, H = 32 };
    unsigned host[H][W], back[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) host[y][x] = (unsigned)(y * 1000 + x);
    size_t pitch = 0;
    CUdeviceptr pitched = 0, linear = 0;
    CU_OK(cuMemAllocPitch_v2(&pitched, &pitch, W * 4, H, 4));
    CUDA_MEMCPY2D to_device = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = W * 4,
                               .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = pitched, .dstPitch = pitch,
                               .WidthInBytes = W * 4, .Height = H};
    CU_OK(cuMemcpy2D_v2(&to_device));
    CUarray array;
    CUDA_ARRAY_DESCRIPTOR descriptor = {.Width = W, .Height = H, .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1};
    CU_OK(cuArrayCreate_v2(&array, &descriptor));
    CUDA_MEMCPY2D to_array = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = pitched, .srcPitch = pitch,
                              .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = array, .WidthInBytes = W * 4, .Height = H};
    CU_OK(cuMemcpy2D_v2(&to_array));
    CU_OK(cuMemAlloc_v2(&linear, sizeof host));
    CUDA_MEMCPY3D from_array = {.srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = array, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                                .dstDevice = linear, .dstPitch = W * 4, .dstHeight = H, .WidthInBytes = W * 4, .Height = H,
                                .Depth = 1};
    CU_OK(cuMemcpy3D_v2(&from_array));
    CU_OK(cuMemcpyDtoH_v2(back, linear, sizeof back));
    EXPECT(memcmp(host, back, sizeof host) == 0, "host -> pitched -> array -> linear -> host round trip");
    CUDA_ARRAY_DESCRIPTOR read_back;
    CU_OK(cuArrayGetDescriptor_v2(&read_back, array));
    EXPECT(read_back.Width == W && read_back.Height == H, "array descriptor");
    CU_OK(cuMemsetD32_v2(linear, 0xdeadbeef, W * H));
    CU_OK(cuMemcpyDtoH_v2(back, linear, sizeof back));
    EXPECT(back[H - 1][W - 1] == 0xdeadbeef, "memset");
    CU_OK(cuMemsetD2D8_v2(pitched, pitch, 0x5a, 8, 2));
    unsigned char bytes[8];
    CU_OK(cuMemcpyDtoH_v2(bytes, pitched + pitch, sizeof bytes));
    EXPECT(bytes[7] == 0x5a, "2D memset");
    EXPECT_CU(cuMemcpyHtoD_v2(linear + sizeof host - 4, host, 8), CUDA_ERROR_INVALID_VALUE); /* past the end */

    /* Pointer queries. */
    unsigned memory_type = 0;
    CU_OK(cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, linear + 100));
    EXPECT(memory_type == CU_MEMORYTYPE_DEVICE, "memory type %u", memory_type);
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_OK(cuMemGetAddressRange_v2(&base, &size, linear + 100));
    EXPECT(base == linear && size == sizeof host, "address range");
    int ordinal = -1;
    CUpointer_attribute queried[] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *outputs[] = {&ordinal};
    CU_OK(cuPointerGetAttributes(1, queried, outputs, (CUdeviceptr)(uintptr_t)&ordinal));
    EXPECT(ordinal == -2, "a host stack address is not a CUDA pointer");
    void *host_buffer = malloc(1 << 20);
    CU_OK(cuMemHostRegister_v2(host_buffer, 1 << 20, CU_MEMHOSTREGISTER_DEVICEMAP));
    CUdeviceptr mapped = 0;
    CU_OK(cuMemHostGetDevicePointer_v2(&mapped, host_buffer, 0));
    EXPECT(mapped == (CUdeviceptr)(uintptr_t)host_buffer, "unified addressing");
    CU_OK(cuMemHostUnregister(host_buffer));
    free(host_buffer);

    /* PTX images name their kernels; libraries hand out kernels usable as functions. */
    const char *ptx = ".version 8.0\n.target sm_80\n.visible .entry saxpy(.param .u64 x)\n{ ret; }\n";
    CUmodule module;
    CUfunction function;
    CU_OK(cuModuleLoadData(&module, ptx));
    CU_OK(cuModuleGetFunction(&function, module, "saxpy"));
    EXPECT_CU(cuModuleGetFunction(&function, module, "missing"), CUDA_ERROR_NOT_FOUND);
    EXPECT_CU(cuModuleLoadData(&module, NULL), CUDA_ERROR_INVALID_VALUE);
    CUlibrary library;
    CUkernel kernel;
    CU_OK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CU_OK(cuLibraryGetKernel(&kernel, library, "saxpy"));
    CU_OK(cuKernelGetFunction(&function, kernel));
    CUlaunchAttribute cooperative = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
    cooperative.value.pad[0] = 1;
    CUlaunchConfig config = {.gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256, .blockDimY = 1, .blockDimZ = 1,
                             .attrs = &cooperative, .numAttrs = 1};
    CU_OK(cuLaunchKernelEx(&config, function, NULL, NULL));
    CU_OK(cuLaunchKernel_ptsz(function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CU_OK(cuStreamSynchronize_ptsz(NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuLibraryUnload(library));

    /* Streams and events across contexts; destroying a context frees what it holds. */
    CUstream stream;
    CUevent event;
    int priority = 0;
    CU_OK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, -3));
    CU_OK(cuStreamGetPriority(stream, &priority));
    EXPECT(priority == -3, "priority %d", priority);
    CU_OK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventRecord(event, stream));
    CU_OK(cuStreamWaitEvent(NULL, event, 0));
    CU_OK(cuEventSynchronize(event));
    float milliseconds = 0;
    EXPECT_CU(cuEventElapsedTime(&milliseconds, event, event), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuEventDestroy_v2(event));
    CU_OK(cuStreamDestroy_v2(stream));
    CU_OK(cuArrayDestroy(array));
    CU_OK(cuMemFree_v2(linear));
    CU_OK(cuMemFree_v2(pitched));
    CU_OK(cuCtxDestroy_v2(second));
    CU_OK(cuCtxDestroy_v2(first));
    EXPECT_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    return 0;
}
