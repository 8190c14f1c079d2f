/*
 * An outside driver-API program, written only against NVIDIA's cuda.h (CUDA 13: cuCtxCreate is
 * cuCtxCreate_v4, cuMemAlloc is cuMemAlloc_v2, cuGetProcAddress is cuGetProcAddress_v2, ...), linked
 * with -lcuda against the mock and run with LD_PRELOAD=libvgpu.so. It must see the limit set in
 * CUDA_DEVICE_MEMORY_LIMIT enforced. Compiled a second time with CUDA_API_PER_THREAD_DEFAULT_STREAM,
 * which routes the stream-ordered calls to their _ptds/_ptsz variants.
 *
 *   cc -I/usr/local/cuda/include driver_api_sample.c -L<native> -lcuda -o sample
 *   CUDA_DEVICE_MEMORY_LIMIT=2147483648 LD_PRELOAD=<native>/libvgpu.so LD_LIBRARY_PATH=<native> ./sample
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call, wanted)                                                                              \
    do {                                                                                                 \
        CUresult result_ = (call);                                                                       \
        if (result_ != (wanted)) {                                                                       \
            const char *name_ = "?";                                                                     \
            cuGetErrorName(result_, &name_);                                                             \
            fprintf(stderr, "  %s returned %s (%d), wanted %d (line %d)\n", #call, name_, result_, wanted, __LINE__); \
            return 1;                                                                                    \
        }                                                                                                \
    } while (0)
#define OK(call) CHECK(call, CUDA_SUCCESS)

int main(void) {
    const char *limit_text = getenv("CUDA_DEVICE_MEMORY_LIMIT"); /* plain bytes in this sample */
    unsigned long long limit = limit_text != NULL ? strtoull(limit_text, NULL, 10) : 0;
    OK(cuInit(0));
    CUdevice device;
    OK(cuDeviceGet(&device, 0));
    size_t total = 0, free_bytes = 0;
    OK(cuDeviceTotalMem(&total, device));
    if (total != limit) return fprintf(stderr, "  cuDeviceTotalMem %zu, limit %llu\n", total, limit), 1;
    CUcontext context;
    OK(cuCtxCreate(&context, NULL, 0, device));
    OK(cuMemGetInfo(&free_bytes, &total));
    if (total != limit) return fprintf(stderr, "  cuMemGetInfo total %zu, limit %llu\n", total, limit), 1;
    CUdeviceptr pointer;
    CHECK(cuMemAlloc(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemAlloc(&pointer, 64 << 20));
    unsigned data[1024], back[1024];
    for (int i = 0; i < 1024; i++) data[i] = (unsigned)i * 2654435761u;
    OK(cuMemcpyHtoD(pointer, data, sizeof data));
    OK(cuMemcpyDtoH(back, pointer, sizeof back));
    if (memcmp(data, back, sizeof data) != 0) return fprintf(stderr, "  copy round trip differs\n"), 1;
    OK(cuMemsetD32(pointer, 7, 1024));
    CUmodule module;
    CUfunction function;
    OK(cuModuleLoadData(&module, "\177ELF sample image"));
    OK(cuModuleGetFunction(&function, module, "sample_kernel"));
    CUstream stream;
    OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    void *arguments[] = {&pointer};
    OK(cuLaunchKernel(function, 256, 1, 1, 128, 1, 1, 0, stream, arguments, NULL));
    OK(cuLaunchKernel(function, 256, 1, 1, 128, 1, 1, 0, 0, arguments, NULL));
    CUdeviceptr async_pointer;
    CHECK(cuMemAllocAsync(&async_pointer, free_bytes, stream), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemAllocAsync(&async_pointer, 32 << 20, stream));
    OK(cuMemFreeAsync(async_pointer, stream));
    OK(cuStreamSynchronize(stream));
    OK(cuCtxSynchronize());
    CUresult (*allocate)(CUdeviceptr *, size_t) = NULL;
    CUdriverProcAddressQueryResult status;
    OK(cuGetProcAddress("cuMemAlloc", (void **)&allocate, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    CHECK(allocate(&pointer, free_bytes), CUDA_ERROR_OUT_OF_MEMORY);
    OK(cuMemFree(pointer));
    OK(cuStreamDestroy(stream));
    OK(cuModuleUnload(module));
    OK(cuCtxDestroy(context));
    printf("driver-API sample: limit %llu bytes enforced\n", limit);
    return 0;
}
