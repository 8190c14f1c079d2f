/* Process-wide state of the interposer and the cuInit hook that brings it up. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "vgpu/vgpu.h"

struct vgpu_runtime runtime;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct vgpu_region *) attached_region;
static bool started;

struct vgpu_region *vgpu_runtime_region(void) {
    struct vgpu_region *region = atomic_load_explicit(&attached_region, memory_order_acquire);
    if (region != NULL) return region;
    const struct vgpu_config *config = vgpu_config_get();
    if (config == NULL) return NULL;
    pthread_mutex_lock(&region_lock);
    region = atomic_load(&attached_region);
    if (region == NULL) {
        region = vgpu_region_attach(config);
        atomic_store_explicit(&attached_region, region, memory_order_release);
    }
    pthread_mutex_unlock(&region_lock);
    return region;
}

static void leave_region(void) {
    if (runtime.region != NULL && runtime.slot != NULL && runtime.slot->pid == getpid())
        vgpu_region_leave(runtime.region, runtime.slot);
}

/* A forked child shares the parent's slot and driver state but cannot use the parent's CUDA
 * contexts; it stops enforcing and claims its own slot if it initialises CUDA again. */
static void after_fork_in_child(void) {
    atomic_store(&runtime.active, 0);
    runtime.slot = NULL;
    started = false;
    pthread_mutex_init(&start_lock, NULL);
    pthread_mutex_init(&region_lock, NULL);
    vgpu_context_after_fork();
}

/* Learns the devices this process sees, publishes their UUIDs for the node monitor and NVML-only
 * processes, and reads the limits the region enforces. */
static CUresult learn_devices(struct vgpu_region *region) {
    int count = 0;
    CUresult result = real.cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS) return result;
    if (count > VGPU_MAX_DEVICES) {
        LOG_WARN("%d CUDA devices visible; limits apply to the first %d", count, VGPU_MAX_DEVICES);
        count = VGPU_MAX_DEVICES;
    }
    for (int ordinal = 0; ordinal < count; ordinal++) {
        CUuuid uuid;
        __typeof__(real.cuDeviceGetUuid) get_uuid = real.cuDeviceGetUuid_v2 ? real.cuDeviceGetUuid_v2 : real.cuDeviceGetUuid;
        if (get_uuid == NULL || get_uuid(&uuid, ordinal) != CUDA_SUCCESS) {
            LOG_WARN("cannot read the UUID of CUDA device %d; NVML cannot report its limit", ordinal);
            runtime.devices[ordinal].uuid[0] = '\0';
        } else {
            vgpu_uuid_format((const unsigned char *)uuid.bytes, runtime.devices[ordinal].uuid);
            if (region->devices[ordinal].uuid[0] == '\0')
                vgpu_copy_string(region->devices[ordinal].uuid, runtime.devices[ordinal].uuid, sizeof region->devices[ordinal].uuid);
        }
        runtime.devices[ordinal].memory_limit = region->devices[ordinal].memory_limit;
        runtime.devices[ordinal].sm_limit = region->devices[ordinal].sm_limit;
        if (runtime.devices[ordinal].sm_limit > 0) atomic_store(&runtime.any_sm_limit, 1);
    }
    if (region->header.visible_devices < (uint32_t)count) region->header.visible_devices = (uint32_t)count;
    runtime.device_count = count;
    return CUDA_SUCCESS;
}

/* Brings enforcement up after the real cuInit succeeded. */
static CUresult start(const struct vgpu_config *config) {
    pthread_mutex_lock(&start_lock);
    CUresult result = CUDA_SUCCESS;
    if (!started) {
        struct vgpu_region *region = vgpu_runtime_region();
        struct vgpu_region_slot *slot = region != NULL ? vgpu_region_claim_slot(region) : NULL;
        if (slot == NULL) {
            result = CUDA_ERROR_OPERATING_SYSTEM;
        } else {
            runtime.config = config;
            runtime.region = region;
            runtime.slot = slot;
            result = learn_devices(region);
        }
        if (result == CUDA_SUCCESS) {
            started = true;
            vgpu_controller_start();
            atomic_store_explicit(&runtime.active, 1, memory_order_release);
            LOG_INFO("enforcing limits from %s on %d device(s)", config->source, runtime.device_count);
        }
    }
    pthread_mutex_unlock(&start_lock);
    return result;
}

static pthread_once_t process_hooks_once = PTHREAD_ONCE_INIT;

static void install_process_hooks(void) {
    pthread_atfork(NULL, NULL, after_fork_in_child);
    atexit(leave_region);
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
    CUresult result = real.cuInit(Flags);
    if (result != CUDA_SUCCESS || config->disable_control || vgpu_active()) return result;
    pthread_once(&process_hooks_once, install_process_hooks);
    return start(config);
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
static pthread_mutex_t context_cache_lock = PTHREAD_MUTEX_INITIALIZER;
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
