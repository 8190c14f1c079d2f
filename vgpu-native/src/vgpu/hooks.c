/* The three ways a program reaches the driver, and how each one reaches libvgpu instead:
 *   1. calls linked against libcuda.so.1: libvgpu.so is preloaded and exports the same names;
 *   2. dlopen("libcuda.so.1") + dlsym(handle, name), as the CUDA runtime does: libvgpu exports dlsym
 *      and hands out its hook when the driver's own function would be returned;
 *   3. cuGetProcAddress(_v2): the real driver resolves (name, version, per-thread flag) and libvgpu
 *      swaps the function it chose for the matching hook.
 * Names that are not hooked resolve exactly as without libvgpu; RTLD_NEXT and RTLD_DEFAULT lookups
 * keep their caller's semantics (the real dlsym is reached by a tail call). */
#include <dlfcn.h>
#include <string.h>

#include "common/log.h"
#include "common/proctable.h"
#include "vgpu/vgpu.h"

struct hook {
    const char *name;
    void *hook;
    void **real;
};

#define HOOK(name) {#name, (void *)&name, (void **)&real.name},
static const struct hook HOOKS[] = {
    HOOK(cuInit) HOOK(cuGetProcAddress) HOOK(cuGetProcAddress_v2) HOOK(cuDeviceTotalMem_v2) HOOK(cuMemGetInfo_v2)
    HOOK(cuCtxCreate) HOOK(cuCtxCreate_v2) HOOK(cuCtxCreate_v3) HOOK(cuCtxCreate_v4) HOOK(cuCtxDestroy) HOOK(cuCtxDestroy_v2)
    HOOK(cuDevicePrimaryCtxRetain) HOOK(cuDevicePrimaryCtxRelease) HOOK(cuDevicePrimaryCtxRelease_v2)
    HOOK(cuDevicePrimaryCtxReset) HOOK(cuDevicePrimaryCtxReset_v2)
    HOOK(cuMemAlloc_v2) HOOK(cuMemAllocPitch_v2) HOOK(cuMemAllocManaged) HOOK(cuMemFree_v2)
    HOOK(cuMemAllocAsync) HOOK(cuMemAllocAsync_ptsz) HOOK(cuMemAllocFromPoolAsync) HOOK(cuMemAllocFromPoolAsync_ptsz)
    HOOK(cuMemFreeAsync) HOOK(cuMemFreeAsync_ptsz) HOOK(cuMemCreate) HOOK(cuMemRelease)
    HOOK(cuArrayCreate_v2) HOOK(cuArray3DCreate_v2) HOOK(cuArrayDestroy) HOOK(cuMipmappedArrayCreate)
    HOOK(cuMipmappedArrayDestroy)
    HOOK(cuLaunchKernel) HOOK(cuLaunchKernel_ptsz) HOOK(cuLaunchKernelEx) HOOK(cuLaunchKernelEx_ptsz)
    HOOK(cuLaunchCooperativeKernel) HOOK(cuLaunchCooperativeKernel_ptsz)
    HOOK(cuStreamBeginCapture) HOOK(cuStreamBeginCapture_ptsz) HOOK(cuStreamBeginCapture_v2)
    HOOK(cuStreamBeginCapture_v2_ptsz) HOOK(cuStreamEndCapture) HOOK(cuStreamEndCapture_ptsz)
    HOOK(cuGraphInstantiate) HOOK(cuGraphInstantiate_v2) HOOK(cuGraphInstantiateWithFlags)
    HOOK(cuGraphInstantiateWithParams) HOOK(cuGraphInstantiateWithParams_ptsz) HOOK(cuGraphUpload) HOOK(cuGraphUpload_ptsz)
    HOOK(cuGraphLaunch) HOOK(cuGraphLaunch_ptsz) HOOK(cuGraphExecDestroy) HOOK(cuDeviceGraphMemTrim)
    HOOK(nvmlDeviceGetMemoryInfo) HOOK(nvmlDeviceGetMemoryInfo_v2) HOOK(nvmlInit) HOOK(nvmlInit_v2) HOOK(nvmlInitWithFlags)
};
#undef HOOK

static const struct hook *hook_named(const char *name) {
    for (unsigned i = 0; i < sizeof HOOKS / sizeof HOOKS[0]; i++)
        if (strcmp(HOOKS[i].name, name) == 0) return &HOOKS[i];
    return NULL;
}

static bool control_disabled(void) {
    const struct vgpu_config *config = vgpu_config_get();
    return config != NULL && config->disable_control;
}

/* ---- dlsym --------------------------------------------------------------------------------- */

static bool may_be_hooked(const char *symbol) {
    return (symbol[0] == 'c' && symbol[1] == 'u') || strncmp(symbol, "nvml", 4) == 0;
}

__attribute__((noinline)) static void *resolve_hooked(void *handle, const char *symbol, const void *caller) {
    void *found = vgpu_real_dlsym(handle, symbol);
    const struct hook *hook = found != NULL ? hook_named(symbol) : NULL;
    if (hook == NULL || found == hook->hook) return found;
    /* The driver looking itself up must get its own function, or it would recurse into us. */
    bool nvml = symbol[0] == 'n';
    if (!(nvml ? vgpu_load_nvml() : vgpu_load_cuda()) || vgpu_address_in_driver(caller) || control_disabled()) return found;
    return found == *hook->real ? hook->hook : found;
}

VGPU_EXPORT void *dlsym(void *handle, const char *symbol);
void *dlsym(void *handle, const char *symbol) {
    if (handle != RTLD_NEXT && may_be_hooked(symbol))
        return resolve_hooked(handle, symbol, __builtin_return_address(0));
    /* Tail call: glibc's dlsym sees our caller's return address, so RTLD_NEXT and RTLD_DEFAULT
     * resolve relative to the caller, exactly as without libvgpu. */
    dlsym_function real_dlsym = vgpu_real_dlsym_function();
    if (__builtin_expect(real_dlsym == NULL, 0)) return NULL; /* a glibc whose dlsym versions are all unknown */
    return real_dlsym(handle, symbol);
}

/* ---- cuGetProcAddress ---------------------------------------------------------------------- */

/* The hook for the function the driver returned: matched by address, else by the variant the
 * driver's own rule picks for (symbol, version, flags). */
static void *substitute(const char *symbol, int version, cuuint64_t flags, void *found) {
    if (found == NULL || control_disabled()) return found;
    for (unsigned i = 0; i < sizeof HOOKS / sizeof HOOKS[0]; i++)
        if (*HOOKS[i].real == found) return HOOKS[i].hook;
    CUdriverProcAddressQueryResult status;
    int index = vgpu_proc_select(symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &status);
    const struct hook *hook = index >= 0 ? hook_named(VGPU_PROC_VARIANTS[index].symbol) : NULL;
    return (hook != NULL && *hook->real != NULL) ? hook->hook : found;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolFound) {
    if (!vgpu_load_cuda() || real.cuGetProcAddress_v2 == NULL) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = real.cuGetProcAddress_v2(symbol, pfn, driverVersion, flags, symbolFound);
    if (result == CUDA_SUCCESS && pfn != NULL && symbol != NULL) *pfn = substitute(symbol, driverVersion, flags, *pfn);
    return result;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    if (!vgpu_load_cuda() || real.cuGetProcAddress == NULL) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult result = real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    if (result == CUDA_SUCCESS && pfn != NULL && symbol != NULL) *pfn = substitute(symbol, cudaVersion, flags, *pfn);
    return result;
}
