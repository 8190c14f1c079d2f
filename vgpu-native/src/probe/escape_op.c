/* The probe's escape op: allocates as a hostile process in a container could, through a private copy of
 * the driver that libvgpu.so never sees. dlmopen(LM_ID_NEWLM) loads the same libcuda.so.1 file again,
 * with its own dependencies, into a new link-map namespace: preloaded libraries (LD_PRELOAD,
 * /etc/ld.so.preload) exist only in the first namespace, so none of the copy's calls meet the
 * interposer. The memory is real all the same: the driver (the mock's shared state) books it to this
 * process, and NVML's per-process accounting shows it, which is what the node watchdog acts on. */
#include <dlfcn.h>
#include <string.h>

#include "cuda_api.h"
#include "probe/probe.h"

#define MIB (1ULL << 20)

struct private_driver {
    CUresult (*init)(unsigned int);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_context_retain)(CUcontext *, CUdevice);
    CUresult (*context_set_current)(CUcontext);
    CUresult (*allocate)(CUdeviceptr *, size_t);
};

/* The file the dynamic linker loaded libcuda.so.1 from (cuDriverGetVersion is not hooked, so its address
 * is the driver's); the soname if that cannot be told. */
static const char *driver_path(void) {
    Dl_info info;
    if (dladdr((void *)&cuDriverGetVersion, &info) != 0 && info.dli_fname != NULL && strchr(info.dli_fname, '/') != NULL)
        return info.dli_fname;
    return "libcuda.so.1";
}

/* Loaded once and never unloaded: what it allocated stays allocated. */
static bool load_private_driver(struct private_driver *driver) {
    static void *handle;
    const char *path = driver_path();
    if (handle == NULL && (handle = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        probe_note("escape: dlmopen(LM_ID_NEWLM, %s): %s", path, dlerror());
        return false;
    }
    struct {
        const char *name;
        void **target;
    } symbols[] = {
        {"cuInit", (void **)&driver->init},
        {"cuDeviceGet", (void **)&driver->device_get},
        {"cuDevicePrimaryCtxRetain", (void **)&driver->primary_context_retain},
        {"cuCtxSetCurrent", (void **)&driver->context_set_current},
        {"cuMemAlloc_v2", (void **)&driver->allocate},
    };
    for (unsigned i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        if ((*symbols[i].target = dlsym(handle, symbols[i].name)) == NULL) {
            probe_note("escape: the private copy of %s has no %s", path, symbols[i].name);
            return false;
        }
    }
    return true;
}

void probe_escape(const struct probe_op *op) {
    struct private_driver driver;
    CUresult result = CUDA_ERROR_UNKNOWN;
    if (load_private_driver(&driver)) {
        CUdevice device = 0;
        CUcontext context = NULL;
        CUdeviceptr pointer = 0;
        if ((result = driver.init(0)) == CUDA_SUCCESS && (result = driver.device_get(&device, op->ordinal)) == CUDA_SUCCESS &&
            (result = driver.primary_context_retain(&context, device)) == CUDA_SUCCESS &&
            (result = driver.context_set_current(context)) == CUDA_SUCCESS)
            result = driver.allocate(&pointer, op->size_mib * MIB);
    }
    probe_emit("\"op\":\"escape\",\"sizeMiB\":%llu,\"result\":%d", (unsigned long long)op->size_mib, (int)result);
}
