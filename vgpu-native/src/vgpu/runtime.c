/* Process-wide state of the interposer and the cuInit hook that brings it up. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

struct vgpu_runtime runtime;

VGPU_MUTEX(start_lock);
VGPU_MUTEX(region_lock);
VGPU_ONCE(process_hooks_once);
static _Atomic(struct vgpu_region *) attached_region;
static bool region_refused; /* under region_lock: one attempt per process, one log line */
static bool prepared, started;

struct vgpu_region *vgpu_runtime_region(void) {
    struct vgpu_region *region = atomic_load_explicit(&attached_region, memory_order_acquire);
    if (region != NULL) return region;
    const struct vgpu_config *config = vgpu_config_get();
    if (config == NULL) return NULL;
    pthread_mutex_lock(&region_lock);
    region = atomic_load(&attached_region);
    if (region == NULL && !region_refused) {
        /* A region that could not be used is not tried again: the process stays without one (fails
         * closed) rather than logging, and waiting, on every later NVML query or cuInit. */
        region = vgpu_region_attach(config);
        region_refused = region == NULL;
        atomic_store_explicit(&attached_region, region, memory_order_release);
    }
    pthread_mutex_unlock(&region_lock);
    return region;
}

static void leave_region(void) {
    struct vgpu_region_slot *slot = atomic_load(&runtime.slot);
    if (runtime.region != NULL && slot != NULL && slot->pid == getpid()) vgpu_region_leave(runtime.region, slot);
}

static void install_process_hooks(void) { atexit(leave_region); }

/* A forked child: the parent's slot is the parent's. */
struct vgpu_region_slot *vgpu_claim_own_slot(void) {
    if (runtime.region == NULL) return NULL;
    static _Atomic int reported;
    pthread_mutex_lock(&start_lock);
    struct vgpu_region_slot *slot = atomic_load(&runtime.slot);
    if (slot == NULL) {
        slot = vgpu_region_claim_slot(runtime.region);
        atomic_store_explicit(&runtime.slot, slot, memory_order_release);
        if (slot != NULL) vgpu_controller_start(); /* the parent's housekeeping thread was not forked */
        else if (!atomic_exchange(&reported, 1)) LOG_ERROR("forked child has no slot in the shared region; it allocates nothing");
    }
    pthread_mutex_unlock(&start_lock);
    return slot;
}

/* With VGPU_DEVICES: the ordinal's card gets the limits of its place in the list, or is refused. The
 * tenant chooses which cards are visible and in what order (NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES),
 * so only the UUID the driver reports says which card an ordinal is. */
static void grant_by_uuid(const struct vgpu_config *config, int ordinal, const unsigned char uuid[16]) {
    struct vgpu_device *device = &runtime.devices[ordinal];
    int grant = vgpu_config_grant_of(config, uuid);
    if (grant < 0) {
        LOG_ERROR("CUDA device %d (%s) is refused: it is not among VGPU_DEVICES of %s; no context or memory on it",
                  ordinal, device->uuid, config->source);
        return;
    }
    device->memory_limit = config->memory_limit[grant];
    device->sm_limit = config->sm_limit[grant];
    device->region_entry = grant;
    device->refused = false;
}

/* Learns the devices this process sees and publishes their UUIDs for the node monitor and NVML-only
 * processes. The limits are the configuration's, whatever the region holds. */
static void learn_devices(const struct vgpu_config *config, struct vgpu_region *region) {
    runtime.by_uuid = config->granted_count > 0;
    for (int ordinal = 0; ordinal < VGPU_MAX_DEVICES; ordinal++) {
        /* By UUID every ordinal is refused until its card is found in the grant. */
        runtime.devices[ordinal].memory_limit = runtime.by_uuid ? 0 : config->memory_limit[ordinal];
        runtime.devices[ordinal].sm_limit = runtime.by_uuid ? 0 : config->sm_limit[ordinal];
        runtime.devices[ordinal].refused = runtime.by_uuid;
        runtime.devices[ordinal].region_entry = runtime.by_uuid ? 0 : ordinal; /* a refused ordinal books nothing */
    }
    int count = 0;
    CUresult result = real.cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS) {
        /* Enforcement needs no count: every ordinal the program can use meets its limit. */
        LOG_WARN("cannot count CUDA devices (error %d): NVML cannot be matched to them", (int)result);
        count = 0;
    }
    if (count > VGPU_MAX_DEVICES) {
        LOG_WARN("%d CUDA devices visible; limits apply to the first %d", count, VGPU_MAX_DEVICES);
        count = VGPU_MAX_DEVICES;
    }
    __typeof__(real.cuDeviceGetUuid) get_uuid = real.cuDeviceGetUuid_v2 ? real.cuDeviceGetUuid_v2 : real.cuDeviceGetUuid;
    for (int ordinal = 0; ordinal < count; ordinal++) {
        CUuuid uuid;
        if (get_uuid == NULL || get_uuid(&uuid, ordinal) != CUDA_SUCCESS) {
            if (runtime.by_uuid)
                LOG_ERROR("CUDA device %d is refused: its UUID cannot be read, so it cannot be matched to VGPU_DEVICES of %s",
                          ordinal, config->source);
            else
                LOG_WARN("cannot read the UUID of CUDA device %d; NVML cannot report its limit", ordinal);
            runtime.devices[ordinal].uuid[0] = '\0';
            continue;
        }
        vgpu_uuid_format((const unsigned char *)uuid.bytes, runtime.devices[ordinal].uuid);
        if (runtime.by_uuid) grant_by_uuid(config, ordinal, (const unsigned char *)uuid.bytes);
        /* With VGPU_DEVICES the region's entries already carry the granted UUIDs (region.c). */
        if (!runtime.by_uuid && region->devices[ordinal].uuid[0] == '\0')
            vgpu_copy_string(region->devices[ordinal].uuid, runtime.devices[ordinal].uuid, sizeof region->devices[ordinal].uuid);
    }
    for (int ordinal = 0; ordinal < VGPU_MAX_DEVICES; ordinal++)
        if (runtime.devices[ordinal].sm_limit > 0) atomic_store(&runtime.any_sm_limit, 1);
    if (region->header.visible_devices < (uint32_t)count) region->header.visible_devices = (uint32_t)count;
    runtime.device_count = count > 0 ? count : VGPU_MAX_DEVICES;
}

/* Everything enforcement needs that can fail, before the real driver starts: a process that cannot
 * enforce its limits must not get a working driver either. */
static CUresult prepare(const struct vgpu_config *config) {
    const char *missing = vgpu_missing_required_cuda();
    if (missing != NULL) {
        LOG_ERROR("cuInit refused: the driver has no %s, without which libvgpu cannot enforce limits", missing);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_lock(&start_lock);
    CUresult result = CUDA_SUCCESS;
    if (!prepared) {
        struct vgpu_region *region = vgpu_runtime_region();
        struct vgpu_region_slot *slot = region != NULL ? vgpu_region_claim_slot(region) : NULL;
        if (slot == NULL) {
            result = CUDA_ERROR_OPERATING_SYSTEM;
        } else {
            runtime.config = config;
            runtime.region = region;
            atomic_store_explicit(&runtime.slot, slot, memory_order_release);
            prepared = true;
        }
    }
    pthread_mutex_unlock(&start_lock);
    return result;
}

/* Brings enforcement up after the real cuInit succeeded. */
static void start(const struct vgpu_config *config) {
    pthread_mutex_lock(&start_lock);
    if (!started) {
        learn_devices(config, runtime.region);
        started = true;
        vgpu_controller_start();
        atomic_store_explicit(&runtime.active, 1, memory_order_release);
        LOG_INFO("enforcing limits from %s on %d device(s)", config->source, runtime.device_count);
    }
    pthread_mutex_unlock(&start_lock);
}

CUresult cuInit(unsigned int Flags) {
    const struct vgpu_config *config = vgpu_config_get();
    if (config == NULL) {
        /* cuInit is where a malformed limit must stop the program: the real driver is never
         * initialised, so every later call fails too. */
        LOG_ERROR("cuInit refused: %s", vgpu_config_error());
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!vgpu_load_cuda() || real.cuInit == NULL) return CUDA_ERROR_NOT_INITIALIZED;
    if (config->disable_control) return real.cuInit(Flags);
    if (!vgpu_active()) {
        CUresult result = prepare(config);
        if (result != CUDA_SUCCESS) return result;
    }
    CUresult result = real.cuInit(Flags);
    if (result != CUDA_SUCCESS || vgpu_active()) return result;
    vgpu_once(&process_hooks_once, install_process_hooks);
    start(config);
    return CUDA_SUCCESS;
}

CUresult vgpu_current_ordinal(int *ordinal) {
    CUdevice device = 0;
    CUresult result = real.cuCtxGetDevice(&device);
    if (result != CUDA_SUCCESS) return result;
    *ordinal = device;
    return CUDA_SUCCESS;
}

/* Devices of contexts already seen (a context's device never changes). Readers take no lock: each
 * entry is a tiny seqlock, written by one writer at a time under context_cache_lock. */
#define CONTEXT_CACHE 64
static struct {
    _Atomic uint32_t sequence; /* odd while being written */
    _Atomic(CUcontext) context;
    _Atomic int ordinal;
} context_devices[CONTEXT_CACHE];
VGPU_MUTEX(context_cache_lock);
static unsigned context_cache_next;

static bool cached_context_ordinal(CUcontext context, int *ordinal) {
    for (int i = 0; i < CONTEXT_CACHE; i++) {
        uint32_t before = atomic_load_explicit(&context_devices[i].sequence, memory_order_acquire);
        if (before & 1) continue;
        CUcontext cached = atomic_load_explicit(&context_devices[i].context, memory_order_relaxed);
        int value = atomic_load_explicit(&context_devices[i].ordinal, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (cached == context && atomic_load_explicit(&context_devices[i].sequence, memory_order_relaxed) == before) {
            *ordinal = value;
            return true;
        }
    }
    return false;
}

static CUresult context_ordinal(CUcontext context, int *ordinal) {
    if (cached_context_ordinal(context, ordinal)) return CUDA_SUCCESS;
    CUresult result = real.cuCtxPushCurrent_v2(context);
    if (result != CUDA_SUCCESS) return result;
    CUdevice device = 0;
    result = real.cuCtxGetDevice(&device);
    CUcontext popped = NULL;
    real.cuCtxPopCurrent_v2(&popped);
    if (result != CUDA_SUCCESS) return result;
    pthread_mutex_lock(&context_cache_lock);
    unsigned entry = context_cache_next++ % CONTEXT_CACHE;
    atomic_fetch_add_explicit(&context_devices[entry].sequence, 1, memory_order_acq_rel);
    atomic_store_explicit(&context_devices[entry].context, context, memory_order_relaxed);
    atomic_store_explicit(&context_devices[entry].ordinal, device, memory_order_relaxed);
    atomic_fetch_add_explicit(&context_devices[entry].sequence, 1, memory_order_release);
    pthread_mutex_unlock(&context_cache_lock);
    *ordinal = device;
    return CUDA_SUCCESS;
}

CUresult vgpu_stream_ordinal(CUstream stream, int *ordinal) {
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD || real.cuStreamGetCtx == NULL)
        return vgpu_current_ordinal(ordinal);
    CUcontext context = NULL;
    CUresult result = real.cuStreamGetCtx(stream, &context);
    return result == CUDA_SUCCESS ? context_ordinal(context, ordinal) : result;
}

/* The child has one thread, the parent's memory and the parent's shared region. Whatever another
 * thread held or was half-way through is reset; the parent's contexts and allocations are not the
 * child's (CUDA does not carry them across fork). Enforcement goes on: the limits are the same, the
 * child books from zero in a slot of its own, claimed when it first allocates. */
void vgpu_after_fork_in_child(void) {
    vgpu_locks_after_fork();
    memset(context_devices, 0, sizeof context_devices);
    context_cache_next = 0;
    vgpu_memory_after_fork();
    vgpu_context_after_fork();
    vgpu_controller_after_fork();
    vgpu_graphs_after_fork();
    atomic_store(&runtime.host_pid, 0);
    atomic_store(&runtime.slot, NULL);
}
