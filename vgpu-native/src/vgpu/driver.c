/* Finding the real driver libraries and their functions. libvgpu.so is preloaded into every process
 * of a container (LD_PRELOAD or /etc/ld.so.preload), so nothing here runs until a CUDA or NVML entry
 * point is actually used: a shell or a JVM that never touches the GPU pays nothing. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

#include "common/log.h"
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
    atomic_store_explicit(&real_dlsym_function, found, memory_order_release);
    return found;
}

void *vgpu_real_dlsym(void *handle, const char *symbol) {
    dlsym_function function = vgpu_real_dlsym_function();
    return function != NULL ? function(handle, symbol) : NULL;
}

static const void *cuda_base, *nvml_base;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT, nvml_once = PTHREAD_ONCE_INIT;
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

static void load_nvml(void) {
    void *handle = open_library("libnvidia-ml.so.1");
    if (handle == NULL) return;
    VGPU_REAL_NVML_FUNCTIONS(RESOLVE)
    if (real.nvmlInit_v2 == NULL || real.nvmlInit_v2() != NVML_SUCCESS) {
        LOG_DEBUG("NVML present but not usable; per-process GPU usage cannot be measured");
        return;
    }
    nvml_base = base_of((const void *)real.nvmlInit_v2);
    atomic_store_explicit(&nvml_loaded, 1, memory_order_release);
}

#undef RESOLVE

bool vgpu_load_cuda(void) {
    if (atomic_load_explicit(&cuda_loaded, memory_order_acquire)) return true;
    pthread_once(&cuda_once, load_cuda);
    return atomic_load_explicit(&cuda_loaded, memory_order_acquire) != 0;
}

bool vgpu_load_nvml(void) {
    if (atomic_load_explicit(&nvml_loaded, memory_order_acquire)) return true;
    pthread_once(&nvml_once, load_nvml);
    return atomic_load_explicit(&nvml_loaded, memory_order_acquire) != 0;
}

bool vgpu_address_in_driver(const void *address) {
    const void *base = base_of(address);
    return base != NULL && (base == cuda_base || base == nvml_base);
}
