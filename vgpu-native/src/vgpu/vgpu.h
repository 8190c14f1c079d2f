/*
 * Internals of libvgpu.so, the interposer that enforces a container's GPU memory and compute limits.
 *
 * Vocabulary: a device is named by its CUDA ordinal, the index a program passes to cuDeviceGet after
 * CUDA_VISIBLE_DEVICES, which is also the <i> of CUDA_DEVICE_MEMORY_LIMIT_<i>. NVML handles are
 * mapped to ordinals by UUID, never by nvmlDeviceGetIndex (which names physical GPUs).
 */
#ifndef VGPU_INTERPOSER_H
#define VGPU_INTERPOSER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/util.h"
#include "cuda_api.h"
#include "nvml_types.h"
#include "vgpu/region.h"

#define VGPU_MAX_DEVICES 16

/* ---- configuration (config.c) ---------------------------------------------------------------- */

enum vgpu_policy { VGPU_POLICY_DEFAULT = 0, VGPU_POLICY_FORCE = 1, VGPU_POLICY_DISABLE = 2 };

struct vgpu_config {
    uint64_t memory_limit[VGPU_MAX_DEVICES]; /* bytes, 0 = no limit */
    unsigned sm_limit[VGPU_MAX_DEVICES];     /* percent 1-99, 0 = no limit */
    enum vgpu_policy policy;
    bool disable_control;
    bool oversubscribe;
    int priority;
    char region_path[512];
    char source[600];                        /* "environment" or "limits file <path>" */
    /* VGPU_DEVICES (a limits file only): the cards granted by UUID, in the order memory_limit[i] and
     * sm_limit[i] refer to. 0 = not given: limits by CUDA ordinal, every visible card usable. */
    int granted_count;
    unsigned char granted[VGPU_MAX_DEVICES][16];
};

/* Loads the limits once per process: from /etc/vgpu/limits if it exists (the environment's limit keys
 * are then ignored), else from the file named by VGPU_LIMITS_FILE, else from the environment. Returns
 * NULL if anything is malformed, or a limits file is not complete (a directory, unreadable, empty, or
 * without its END line); vgpu_config_error() then holds one line naming the key and value, or the file. */
const struct vgpu_config *vgpu_config_get(void);
/* The line logged for the malformed configuration, for repeating it on later calls. */
const char *vgpu_config_error(void);
/* Loads the limits now when the grant directory (/etc/vgpu) is mounted, waiting for a grant on its way;
 * does nothing elsewhere. For NVML's init, which nvidia-smi calls before anything libvgpu hooks. */
void vgpu_config_await_grant(void);
/* Position of a card in VGPU_DEVICES, or -1 when the configuration does not grant it. */
int vgpu_config_grant_of(const struct vgpu_config *config, const unsigned char uuid[16]);

/* ---- the real driver libraries (driver.c) -------------------------------------------------- */

/* Every driver function libvgpu calls, hooked or not. Hooks call through these, never by name. */
#define VGPU_REAL_CUDA_FUNCTIONS(X)                                                                   \
    X(cuInit) X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuDeviceGetCount) X(cuDeviceGetUuid)      \
    X(cuDeviceGetUuid_v2) X(cuDeviceTotalMem_v2) X(cuMemGetInfo_v2) X(cuCtxGetCurrent) X(cuCtxGetDevice) \
    X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuStreamGetCtx) X(cuPointerGetAttribute)          \
    X(cuCtxCreate) X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy) X(cuCtxDestroy_v2) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxRelease_v2)        \
    X(cuDevicePrimaryCtxReset) X(cuDevicePrimaryCtxReset_v2) X(cuDevicePrimaryCtxGetState)           \
    X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemFree_v2) X(cuMemAllocAsync)   \
    X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync) \
    X(cuMemFreeAsync_ptsz) X(cuMemCreate) X(cuMemRelease) X(cuArrayCreate_v2) X(cuArray3DCreate_v2)  \
    X(cuArrayDestroy) X(cuMipmappedArrayCreate) X(cuMipmappedArrayDestroy) X(cuLaunchKernel)         \
    X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) X(cuLaunchCooperativeKernel) \
    X(cuLaunchCooperativeKernel_ptsz) X(cuEventCreate) X(cuEventRecord) X(cuEventRecord_ptsz)         \
    X(cuEventQuery) X(cuEventDestroy_v2) X(cuStreamQuery) X(cuStreamQuery_ptsz)                       \
    X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2)                  \
    X(cuStreamBeginCapture_v2_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)                 \
    X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz) X(cuGraphGetNodes) X(cuGraphNodeGetType)       \
    X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeGetParams_v2) X(cuGraphMemAllocNodeGetParams)   \
    X(cuGraphInstantiate) X(cuGraphInstantiate_v2) X(cuGraphInstantiateWithFlags)                    \
    X(cuGraphInstantiateWithParams) X(cuGraphInstantiateWithParams_ptsz) X(cuGraphUpload)            \
    X(cuGraphUpload_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz) X(cuGraphExecDestroy)               \
    X(cuDeviceGraphMemTrim) X(cuDeviceGetGraphMemAttribute)

#define VGPU_REAL_NVML_FUNCTIONS(X)                                                                    \
    X(nvmlInit_v2) X(nvmlInit) X(nvmlInitWithFlags) X(nvmlDeviceGetCount_v2) X(nvmlDeviceGetHandleByIndex_v2) X(nvmlDeviceGetHandleByUUID) \
    X(nvmlDeviceGetUUID) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2)                     \
    X(nvmlDeviceGetComputeRunningProcesses_v3) X(nvmlDeviceGetProcessUtilization)                      \
    X(nvmlDeviceGetUtilizationRates)

/* Functions without which limits cannot be enforced at all: a driver that lacks one is refused at cuInit.
 * Every other function may be missing: its hook returns an error, or the feature that needs it is off
 * with one log line (driver.c). */
#define VGPU_REQUIRED_CUDA_FUNCTIONS(X)                                                                \
    X(cuInit) X(cuDeviceGetCount) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxPushCurrent_v2)          \
    X(cuCtxPopCurrent_v2) X(cuDeviceTotalMem_v2) X(cuMemFree_v2) X(cuCtxDestroy_v2) X(cuDevicePrimaryCtxGetState)

struct vgpu_real_functions {
#define VGPU_REAL_POINTER(name) __typeof__(&name) name;
    VGPU_REAL_CUDA_FUNCTIONS(VGPU_REAL_POINTER)
    VGPU_REAL_NVML_FUNCTIONS(VGPU_REAL_POINTER)
#undef VGPU_REAL_POINTER
};

extern struct vgpu_real_functions real;

/* dlopens libcuda.so.1 (resp. libnvidia-ml.so.1) once and resolves the functions above; false if the
 * library is absent. Lock-free after the first call. Loading NVML logs one line per missing function,
 * naming what works differently without it. */
bool vgpu_load_cuda(void);
bool vgpu_load_nvml(void);
/* The first required driver function the loaded driver lacks, or NULL. */
const char *vgpu_missing_required_cuda(void);
/* True if address lies inside the real libcuda.so.1 or libnvidia-ml.so.1 (recursion guard of dlsym). */
bool vgpu_address_in_driver(const void *address);
/* The real dlsym, found with dlvsym so that our own export does not shadow it. */
typedef void *(*dlsym_function)(void *, const char *);
dlsym_function vgpu_real_dlsym_function(void);
void *vgpu_real_dlsym(void *handle, const char *symbol);

/* ---- process state (runtime.c) ------------------------------------------------------------- */

struct vgpu_device {
    char uuid[VGPU_UUID_TEXT_LENGTH + 1];
    uint64_t memory_limit;                   /* from the configuration, never from the region */
    unsigned sm_limit;
    bool refused;                            /* VGPU_DEVICES does not grant this ordinal's card */
    int region_entry;                        /* its entry in the shared region: vgpu_region_entry() */
};

struct vgpu_runtime {
    _Atomic int active;                      /* limits enforced: cuInit succeeded, control not disabled */
    _Atomic int any_sm_limit;                /* some device has a compute limit */
    _Atomic int launched;                    /* a kernel was launched since the last housekeeping tick */
    _Atomic int32_t host_pid;                /* this process's pid as NVML reports it, 0 = not learnt */
    const struct vgpu_config *config;
    struct vgpu_region *region;
    _Atomic(struct vgpu_region_slot *) slot; /* NULL in a forked child until it first needs one */
    int device_count;
    bool by_uuid;                            /* the configuration grants cards by UUID (VGPU_DEVICES) */
    struct vgpu_device devices[VGPU_MAX_DEVICES];
};

extern struct vgpu_runtime runtime;

/* The CUresult for calls made while the configuration is malformed (cuInit already refused). */
#define VGPU_CONFIG_REFUSED CUDA_ERROR_NOT_INITIALIZED

static inline bool vgpu_active(void) { return atomic_load_explicit(&runtime.active, memory_order_acquire) != 0; }
static inline bool vgpu_ordinal_limited(int ordinal) { return ordinal >= 0 && ordinal < runtime.device_count; }
/* A card that VGPU_DEVICES does not grant (also every ordinal past the 16 the contract can name, and one
 * whose UUID could not be read): no context, no allocation, no memory on it. Read after vgpu_active(). */
static inline bool vgpu_ordinal_refused(int ordinal) {
    return __builtin_expect(runtime.by_uuid, 0) && ordinal >= 0 && (ordinal >= VGPU_MAX_DEVICES || runtime.devices[ordinal].refused);
}
/* The shared region's entry of a limited ordinal that is not refused: the ordinal itself, or with
 * VGPU_DEVICES the card's place in that list, so that processes whose visible order differs (each may
 * set CUDA_VISIBLE_DEVICES) and the node monitor, which reads the region by grant, name one entry per card. */
static inline int vgpu_region_entry(int ordinal) { return runtime.devices[ordinal].region_entry; }
/* The CUresult of a context asked for on a refused card: the driver's own answer for a device whose
 * compute mode prohibits contexts. */
#define VGPU_DEVICE_REFUSED CUDA_ERROR_DEVICE_UNAVAILABLE

/* Attaches the shared region without enforcing anything yet (NVML-only processes use this). */
struct vgpu_region *vgpu_runtime_region(void);
/* This process's slot in the region; a forked child claims its own on first use (and restarts the
 * housekeeping thread). NULL if no slot is free, after logging once. */
struct vgpu_region_slot *vgpu_claim_own_slot(void);
static inline struct vgpu_region_slot *vgpu_own_slot(void) {
    struct vgpu_region_slot *slot = atomic_load_explicit(&runtime.slot, memory_order_acquire);
    return __builtin_expect(slot != NULL, 1) ? slot : vgpu_claim_own_slot();
}
/* The fork handler (installed by the first vgpu_once): resets every lock, once-only state and the
 * parent's bookkeeping in the child, which keeps enforcing the same limits from a slot of its own. */
void vgpu_after_fork_in_child(void);
/* Index of the device the current context belongs to, or a CUresult < 0 encoded as -(result). */
CUresult vgpu_current_ordinal(int *ordinal);
/* Device of a stream (NULL, legacy and per-thread streams mean the current context). */
CUresult vgpu_stream_ordinal(CUstream stream, int *ordinal);

/* ---- memory accounting (memory.c) ---------------------------------------------------------- */

/* Books bytes against the device's limit, privately (this process's own total never exceeds its limit,
 * whatever the region says) and in the region (the container's processes together do not either);
 * false = over the limit (returns dead processes' memory and retries once before saying so) or the
 * region is corrupt (one log line per process). */
bool vgpu_reserve(int ordinal, uint64_t bytes);
/* The same without reaping or logging, for estimates that may simply not fit. */
bool vgpu_reserve_quietly(int ordinal, uint64_t bytes);
void vgpu_unreserve(int ordinal, uint64_t bytes);
/* The container's usage of the device as this process can vouch for it: the region's count, never less
 * than this process's own bookings, and UINT64_MAX when the region is corrupt (reads as full). */
uint64_t vgpu_usage_view(int ordinal, uint64_t limit);
void vgpu_memory_after_fork(void);
/* Forgets and uncounts every allocation made in a context the driver has destroyed. */
void vgpu_forget_context_allocations(CUcontext context);
/* Gives back the bytes of stream-ordered frees that have happened on their streams; cheap when there
 * are none pending. */
void vgpu_memory_housekeeping(void);

/* ---- graphs (graph.c) ------------------------------------------------------------------------ */

/* After a context was destroyed or a primary context released or reset: what the driver's graph
 * pools still hold is what stays booked. */
void vgpu_graphs_after_context_gone(CUcontext context);
void vgpu_graphs_after_fork(void);

/* ---- contexts (context.c) ------------------------------------------------------------------ */

void vgpu_context_after_fork(void);

/* ---- compute limit (controller.c) ---------------------------------------------------------- */

/* The longest one launch is ever held back by the compute limit (README, "Compute limit"). */
#define VGPU_MAX_LAUNCH_WAIT_NS 1000000000ULL

/* Paces a launch of `units` threads on the stream's device when that device has a compute limit. */
void vgpu_sm_gate(CUstream stream, uint64_t units);
/* Streams of this process being captured into graphs (graph.c); their launches are not paced. */
extern _Atomic int vgpu_capturing_streams;
bool vgpu_stream_capturing(CUstream stream);
void vgpu_controller_start(void);
void vgpu_controller_after_fork(void);
/* Host pid of this process as NVML reports it, if known. */
void vgpu_set_host_pid(pid_t host_pid);

/* ---- NVML (nvml_hooks.c) ------------------------------------------------------------------- */

/* NVML handle of a CUDA ordinal, by UUID; NULL if NVML is unavailable. */
nvmlDevice_t vgpu_nvml_handle_of(int ordinal);

#endif
