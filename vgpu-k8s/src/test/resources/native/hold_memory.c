/* Allocates device memory through the CUDA driver API, says "ready", and holds it until stdin closes:
 * a container process as the node monitor sees it. Prototypes are declared here (ABI of cuda.h 13). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice device);
CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes);

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
    CUdevice device;
    CUcontext context;
    CUdeviceptr ptr;
    if (cuInit(0) || cuDeviceGet(&device, 0) || cuCtxCreate_v2(&context, 0, device) || cuMemAlloc_v2(&ptr, mib << 20)) {
        fprintf(stderr, "driver call failed\n");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (getchar() != EOF) {
    }
    return 0;
}
