/* Finding the real driver libraries and their functions. libvgpu.so is preloaded into every process
 * of a container (LD_PRELOAD or /etc/ld.so.preload), so nothing here runs until a CUDA or NVML entry
 * point is actually used: a shell or a JVM that never touches the GPU pays nothing. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "common/log.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

struct vgpu_real_functions real;

static _Atomic(dlsym_function) real_dlsym_function;

/* Our exported dlsym shadows glibc's; dlvsym (not intercepted) reaches the original. glibc moved
 * dlsym into libc in 2.34 under a new version; older x86_64 and aarch64 versions follow. */
dlsym_function vgpu_real_dlsym_function(void) {
    dlsym_function found = atomic_load_explicit(&real_dlsym_function, memory_order_acquire);
    if (found != NULL) return found;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (unsigned i = 0; i < sizeof versions / sizeof versions[0] && found == NULL; i++)
        found = (dlsym_function)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    static _Atomic int reported;
    if (found == NULL && !atomic_exchange(&reported, 1))
        LOG_ERROR("glibc's dlsym not found under any version libvgpu knows; every dlsym returns NULL");
    atomic_store_explicit(&real_dlsym_function, found, memory_order_release);
    return found;
}

void *vgpu_real_dlsym(void *handle, const char *symbol) {
    dlsym_function function = vgpu_real_dlsym_function();
    return function != NULL ? function(handle, symbol) : NULL;
}

static const void *cuda_base, *nvml_base;
VGPU_ONCE(cuda_once);
VGPU_ONCE(nvml_once);
static _Atomic int cuda_loaded, nvml_loaded;

static const void *base_of(const void *function) {
    Dl_info info;
    return (function != NULL && dladdr(function, &info) != 0) ? info.dli_fbase : NULL;
}

static void *open_library(const char *name) {
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) LOG_DEBUG("%s not loadable: %s", name, dlerror());
    return handle;
}

#define RESOLVE(name) real.name = (__typeof__(real.name))vgpu_real_dlsym(handle, #name);

static void load_cuda(void) {
    void *handle = open_library("libcuda.so.1");
    if (handle == NULL) return;
    VGPU_REAL_CUDA_FUNCTIONS(RESOLVE)
    cuda_base = base_of((const void *)real.cuInit);
    atomic_store_explicit(&cuda_loaded, 1, memory_order_release);
}

const char *vgpu_missing_required_cuda(void) {
#define VGPU_MISSING(name) \
    if (real.name == NULL) return #name;
    VGPU_REQUIRED_CUDA_FUNCTIONS(VGPU_MISSING)
#undef VGPU_MISSING
    return NULL;
}

/* Older NVMLs have only the first versions of these; their signatures are the same. */
#define RESOLVE_OR_FIRST_VERSION(name, first) \
    if (real.name == NULL) real.name = (__typeof__(real.name))vgpu_real_dlsym(handle, #first);

/* What works differently without each NVML function libvgpu uses, logged once per missing function. */
static void report_missing_nvml(void) {
    const struct {
        const void *function;
        const char *name, *consequence;
    } uses[] = {
        {(const void *)real.nvmlDeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID", "devices are found by enumerating NVML's handles"},
        {(const void *)real.nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2", "NVML devices cannot be enumerated"},
        {(const void *)real.nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2", "NVML devices cannot be enumerated"},
        {(const void *)real.nvmlDeviceGetUUID, "nvmlDeviceGetUUID",
         "NVML devices cannot be matched to CUDA devices: NVML memory reports are the driver's, compute limits are not enforced"},
        {(const void *)real.nvmlDeviceGetComputeRunningProcesses_v3, "nvmlDeviceGetComputeRunningProcesses_v3",
         "a new context's memory is measured on the whole device"},
        {(const void *)real.nvmlDeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", "contexts are charged an estimate when not measurable"},
        {(const void *)real.nvmlDeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization",
         "compute limits steer on the whole device's utilization"},
        {(const void *)real.nvmlDeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates",
         "no whole-device utilization to fall back on"},
    };
    for (unsigned i = 0; i < sizeof uses / sizeof uses[0]; i++)
        if (uses[i].function == NULL) LOG_WARN("libnvidia-ml.so.1 has no %s: %s", uses[i].name, uses[i].consequence);
}

static void load_nvml(void) {
    void *handle = open_library("libnvidia-ml.so.1");
    if (handle == NULL) return;
    VGPU_REAL_NVML_FUNCTIONS(RESOLVE)
    RESOLVE_OR_FIRST_VERSION(nvmlInit_v2, nvmlInit)
    RESOLVE_OR_FIRST_VERSION(nvmlDeviceGetCount_v2, nvmlDeviceGetCount)
    RESOLVE_OR_FIRST_VERSION(nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex)
    if (real.nvmlInit_v2 == NULL || real.nvmlInit_v2() != NVML_SUCCESS) {
        LOG_WARN("libnvidia-ml.so.1 is present but cannot be initialised: contexts are charged an estimate, compute "
                 "limits are not enforced, NVML memory reports are the driver's");
        return;
    }
    report_missing_nvml();
    nvml_base = base_of((const void *)real.nvmlInit_v2);
    atomic_store_explicit(&nvml_loaded, 1, memory_order_release);
}

#undef RESOLVE_OR_FIRST_VERSION
#undef RESOLVE

bool vgpu_load_cuda(void) {
    if (atomic_load_explicit(&cuda_loaded, memory_order_acquire)) return true;
    vgpu_once(&cuda_once, load_cuda);
    return atomic_load_explicit(&cuda_loaded, memory_order_acquire) != 0;
}

bool vgpu_load_nvml(void) {
    if (atomic_load_explicit(&nvml_loaded, memory_order_acquire)) return true;
    vgpu_once(&nvml_once, load_nvml);
    return atomic_load_explicit(&nvml_loaded, memory_order_acquire) != 0;
}

bool vgpu_address_in_driver(const void *address) {
    const void *base = base_of(address);
    return base != NULL && (base == cuda_base || base == nvml_base);
}
