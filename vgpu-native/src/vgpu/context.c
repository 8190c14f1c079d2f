/* Contexts cost device memory (hundreds of MiB on real GPUs), so each one is charged against the
 * limit: the memory the driver used to create it is measured with NVML, by this process's own
 * usedGpuMemory before and after when NVML can see this process, otherwise by the device's used memory
 * before and after (serialised across the container through the region). The same measurement finds
 * this process's host pid when it runs in a pid namespace: the one pid that appeared.
 *
 * Destroying a context frees everything allocated in it, so its allocations are uncounted too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/ptrmap.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

#define MAX_LISTED_PROCESSES 128
#define MAX_CONTEXT_BYTES (4ULL << 30)        /* larger deltas are other processes' allocations */
#define PROBE_LOCK_WAIT_NS 2000000000ULL
/* Booked before the first context of a container is created, until it is measured; later contexts
 * book what the last one took. Real contexts take a few hundred MiB. */
#define FIRST_CONTEXT_ESTIMATE (512ULL << 20)

struct process_list {
    unsigned count;
    nvmlProcessInfo_t entries[MAX_LISTED_PROCESSES];
};

struct probe {
    bool usable;
    bool locked;
    bool measured; /* false: NVML could not see the device, the estimate stands */
    nvmlDevice_t handle;
    struct process_list before;
    unsigned long long device_used_before;
};

struct context_record {
    int ordinal;
    uint64_t bytes;
};

VGPU_MUTEX(contexts_lock);
static struct vgpu_ptrmap contexts; /* created CUcontext -> struct context_record */

static struct {
    CUcontext handle;
    uint64_t charged; /* context memory booked while the primary context is active */
} primaries[VGPU_MAX_DEVICES];
VGPU_MUTEX(primary_lock);

/* CUDA contexts do not survive fork: the parent's are not the child's to release. */
void vgpu_context_after_fork(void) {
    memset(primaries, 0, sizeof primaries);
    vgpu_ptrmap_clear(&contexts, free);
}

/* ---- measuring a new context --------------------------------------------------------------- */

static bool list_processes(nvmlDevice_t handle, struct process_list *list) {
    list->count = MAX_LISTED_PROCESSES;
    nvmlReturn_t result = real.nvmlDeviceGetComputeRunningProcesses_v3 != NULL
                              ? real.nvmlDeviceGetComputeRunningProcesses_v3(handle, &list->count, list->entries)
                              : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (result != NVML_SUCCESS) list->count = 0;
    return result == NVML_SUCCESS;
}

static const nvmlProcessInfo_t *find_pid(const struct process_list *list, unsigned pid) {
    for (unsigned i = 0; i < list->count; i++)
        if (list->entries[i].pid == pid) return &list->entries[i];
    return NULL;
}

static bool pid_alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

/* Serialises probes of the container's processes, so two new contexts are not mistaken for one.
 * A dead holder is replaced; a live one is waited for at most PROBE_LOCK_WAIT_NS. */
static bool lock_probe(struct vgpu_region *region) {
    uint32_t self = (uint32_t)getpid();
    uint64_t deadline = vgpu_now_ns() + PROBE_LOCK_WAIT_NS;
    for (;;) {
        uint32_t owner = 0;
        if (atomic_compare_exchange_strong(&region->header.probe_owner, &owner, self)) return true;
        if (owner != self && !pid_alive((pid_t)owner))
            atomic_compare_exchange_strong(&region->header.probe_owner, &owner, 0);
        if (vgpu_now_ns() > deadline) return false;
        vgpu_sleep_ns(1000000);
    }
}

static void unlock_probe(struct vgpu_region *region) {
    uint32_t self = (uint32_t)getpid();
    atomic_compare_exchange_strong(&region->header.probe_owner, &self, 0);
}

static unsigned long long device_used(nvmlDevice_t handle) {
    nvmlMemory_t memory;
    return real.nvmlDeviceGetMemoryInfo != NULL && real.nvmlDeviceGetMemoryInfo(handle, &memory) == NVML_SUCCESS ? memory.used : 0;
}

static void probe_begin(int ordinal, struct probe *probe) {
    memset(probe, 0, sizeof *probe);
    if (!vgpu_load_nvml() || (probe->handle = vgpu_nvml_handle_of(ordinal)) == NULL) return;
    probe->locked = lock_probe(runtime.region);
    probe->usable = list_processes(probe->handle, &probe->before);
    probe->device_used_before = device_used(probe->handle);
}

static void probe_abandon(struct probe *probe) {
    if (probe->locked) unlock_probe(runtime.region);
}

static unsigned host_pid(void) {
    int32_t known = atomic_load(&runtime.host_pid);
    return known > 0 ? (unsigned)known : (unsigned)getpid();
}

/* The memory the new context took, learning this process's host pid on the way. */
static uint64_t probe_end(struct probe *probe) {
    uint64_t bytes = 0;
    struct process_list after;
    if (probe->usable && list_processes(probe->handle, &after)) {
        const nvmlProcessInfo_t *now = find_pid(&after, host_pid()), *then = find_pid(&probe->before, host_pid());
        if (now == NULL) {
            /* Not visible under our own pid: in a pid namespace. One new pid on the device is us. */
            const nvmlProcessInfo_t *appeared = NULL;
            unsigned new_count = 0;
            for (unsigned i = 0; i < after.count; i++)
                if (find_pid(&probe->before, after.entries[i].pid) == NULL) appeared = &after.entries[i], new_count++;
            if (new_count == 1 && probe->locked) {
                vgpu_set_host_pid((pid_t)appeared->pid);
                now = appeared;
            }
        }
        if (now != NULL) {
            unsigned long long previous = then != NULL ? then->usedGpuMemory : 0;
            bytes = now->usedGpuMemory > previous ? now->usedGpuMemory - previous : 0;
            probe->measured = true;
            goto done;
        }
    }
    if (probe->handle != NULL && real.nvmlDeviceGetMemoryInfo != NULL) {
        unsigned long long used = device_used(probe->handle);
        bytes = used > probe->device_used_before ? used - probe->device_used_before : 0;
        probe->measured = true;
    }
done:
    probe_abandon(probe);
    if (bytes > MAX_CONTEXT_BYTES) {
        LOG_WARN("measured %llu bytes for a new context, more than any context takes; charging %llu",
                 (unsigned long long)bytes, MAX_CONTEXT_BYTES);
        bytes = MAX_CONTEXT_BYTES;
    }
    return bytes;
}

static void charge_context_bytes(int ordinal, uint64_t bytes) {
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_fetch_add(&slot->devices[vgpu_region_entry(ordinal)].context_bytes, bytes);
}

static void release_context_bytes(int ordinal, uint64_t bytes) {
    vgpu_unreserve(ordinal, bytes);
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_fetch_sub(&slot->devices[vgpu_region_entry(ordinal)].context_bytes, bytes);
}

/* The driver takes a context's memory before anyone can measure it, so an estimate is booked first
 * (without it, a context created while the container is at its limit would overshoot it) and settled
 * once measured. If even the estimate does not fit, nothing is booked and the measurement decides. */
static uint64_t book_estimate(int ordinal) {
    uint64_t estimate = atomic_load(&runtime.region->devices[vgpu_region_entry(ordinal)].context_bytes); /* any process may write it */
    if (estimate == 0 || estimate > MAX_CONTEXT_BYTES) estimate = FIRST_CONTEXT_ESTIMATE;
    return vgpu_reserve_quietly(ordinal, estimate) ? estimate : 0;
}

/* Replaces the estimate by the measured bytes; false if the context does not fit the limit. */
static bool settle_booking(int ordinal, uint64_t booked, uint64_t measured) {
    if (measured > booked && !vgpu_reserve(ordinal, measured - booked)) {
        vgpu_unreserve(ordinal, booked);
        return false;
    }
    if (booked > measured) vgpu_unreserve(ordinal, booked - measured);
    if (measured > 0) atomic_store(&runtime.region->devices[vgpu_region_entry(ordinal)].context_bytes, measured);
    charge_context_bytes(ordinal, measured);
    LOG_DEBUG("new context on device %d took %llu bytes (%llu booked beforehand)", ordinal, (unsigned long long)measured,
              (unsigned long long)booked);
    return true;
}

/* ---- created contexts ---------------------------------------------------------------------- */

typedef CUresult (*context_factory)(void *arguments);

/* A card VGPU_DEVICES does not grant is made unusable rather than hidden: hiding it would mean
 * renumbering every CUdevice the driver API and NVML take or return, and any function missed would
 * reach the card unlimited; every use of a card's memory or compute needs a context, and these hooks
 * are where contexts come from (cuInit logged which cards are refused). */
static CUresult refuse_device(int ordinal) {
    LOG_DEBUG("context on refused CUDA device %d: %d", ordinal, (int)VGPU_DEVICE_REFUSED);
    return VGPU_DEVICE_REFUSED;
}

static CUresult create_counted(int ordinal, CUcontext *pctx, context_factory create, void *arguments) {
    if (vgpu_active() && vgpu_ordinal_refused(ordinal)) return refuse_device(ordinal);
    if (!vgpu_active() || pctx == NULL || !vgpu_ordinal_limited(ordinal)) return create(arguments);
    struct probe probe;
    probe_begin(ordinal, &probe);
    uint64_t booked = book_estimate(ordinal);
    CUresult result = create(arguments);
    if (result != CUDA_SUCCESS) {
        probe_abandon(&probe);
        vgpu_unreserve(ordinal, booked);
        return result;
    }
    uint64_t bytes = probe_end(&probe);
    if (!probe.measured) bytes = booked;
    struct context_record *record = malloc(sizeof *record);
    if (record == NULL || !settle_booking(ordinal, booked, bytes)) {
        if (record == NULL) vgpu_unreserve(ordinal, booked);
        free(record);
        real.cuCtxDestroy_v2(*pctx);
        *pctx = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *record = (struct context_record){ordinal, bytes};
    pthread_mutex_lock(&contexts_lock);
    bool stored = vgpu_ptrmap_put(&contexts, (uint64_t)(uintptr_t)*pctx, record);
    pthread_mutex_unlock(&contexts_lock);
    if (!stored) {
        release_context_bytes(ordinal, bytes);
        free(record);
        real.cuCtxDestroy_v2(*pctx);
        *pctx = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    LOG_DEBUG("context on device %d charged %llu bytes", ordinal, (unsigned long long)bytes);
    return CUDA_SUCCESS;
}

struct create_arguments {
    CUcontext *context;
    unsigned flags;
    CUdevice device;
    CUexecAffinityParam *affinity;
    int affinity_count;
    CUctxCreateParams *params;
};

static CUresult call_create(void *arguments) {
    struct create_arguments *a = arguments;
    return real.cuCtxCreate(a->context, a->flags, a->device);
}
static CUresult call_create_v2(void *arguments) {
    struct create_arguments *a = arguments;
    return real.cuCtxCreate_v2(a->context, a->flags, a->device);
}
static CUresult call_create_v3(void *arguments) {
    struct create_arguments *a = arguments;
    return real.cuCtxCreate_v3(a->context, a->affinity, a->affinity_count, a->flags, a->device);
}
static CUresult call_create_v4(void *arguments) {
    struct create_arguments *a = arguments;
    return real.cuCtxCreate_v4(a->context, a->params, a->flags, a->device);
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    if (real.cuCtxCreate == NULL) return VGPU_CONFIG_REFUSED;
    struct create_arguments arguments = {.context = pctx, .flags = flags, .device = dev};
    return create_counted(dev, pctx, call_create, &arguments);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    if (real.cuCtxCreate_v2 == NULL) return VGPU_CONFIG_REFUSED;
    struct create_arguments arguments = {.context = pctx, .flags = flags, .device = dev};
    return create_counted(dev, pctx, call_create_v2, &arguments);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags, CUdevice dev) {
    if (real.cuCtxCreate_v3 == NULL) return VGPU_CONFIG_REFUSED;
    struct create_arguments arguments = {
        .context = pctx, .flags = flags, .device = dev, .affinity = paramsArray, .affinity_count = numParams};
    return create_counted(dev, pctx, call_create_v3, &arguments);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev) {
    if (real.cuCtxCreate_v4 == NULL) return VGPU_CONFIG_REFUSED;
    struct create_arguments arguments = {.context = pctx, .flags = flags, .device = dev, .params = ctxCreateParams};
    return create_counted(dev, pctx, call_create_v4, &arguments);
}

static CUresult destroy_counted(CUcontext ctx, CUresult (*destroy)(CUcontext)) {
    if (destroy == NULL) return VGPU_CONFIG_REFUSED;
    CUresult result = destroy(ctx);
    if (result != CUDA_SUCCESS || !vgpu_active()) return result;
    pthread_mutex_lock(&contexts_lock);
    struct context_record *record = vgpu_ptrmap_remove(&contexts, (uint64_t)(uintptr_t)ctx);
    pthread_mutex_unlock(&contexts_lock);
    vgpu_forget_context_allocations(ctx);
    vgpu_graphs_after_context_gone(ctx);
    if (record != NULL) {
        release_context_bytes(record->ordinal, record->bytes);
        free(record);
    }
    return result;
}

CUresult cuCtxDestroy(CUcontext ctx) { return destroy_counted(ctx, real.cuCtxDestroy); }
CUresult cuCtxDestroy_v2(CUcontext ctx) { return destroy_counted(ctx, real.cuCtxDestroy_v2); }

/* ---- primary contexts ---------------------------------------------------------------------- */

static bool primary_active(CUdevice dev) {
    unsigned flags = 0;
    int active = 0;
    return real.cuDevicePrimaryCtxGetState != NULL && real.cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS &&
           active;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    if (real.cuDevicePrimaryCtxRetain == NULL) return VGPU_CONFIG_REFUSED;
    if (vgpu_active() && vgpu_ordinal_refused(dev)) return refuse_device(dev);
    if (!vgpu_active() || pctx == NULL || !vgpu_ordinal_limited(dev)) return real.cuDevicePrimaryCtxRetain(pctx, dev);
    pthread_mutex_lock(&primary_lock);
    CUresult result;
    if (primary_active(dev) && primaries[dev].charged > 0) {
        result = real.cuDevicePrimaryCtxRetain(pctx, dev);
    } else {
        /* The retain that creates the primary context: measure and charge it. */
        struct probe probe;
        probe_begin(dev, &probe);
        uint64_t booked = book_estimate(dev);
        result = real.cuDevicePrimaryCtxRetain(pctx, dev);
        if (result != CUDA_SUCCESS) {
            probe_abandon(&probe);
            vgpu_unreserve(dev, booked);
        } else {
            uint64_t bytes = probe_end(&probe);
            if (!probe.measured) bytes = booked;
            if (!settle_booking(dev, booked, bytes)) {
                __typeof__(real.cuDevicePrimaryCtxRelease) release =
                    real.cuDevicePrimaryCtxRelease_v2 ? real.cuDevicePrimaryCtxRelease_v2 : real.cuDevicePrimaryCtxRelease;
                if (release != NULL) release(dev);
                result = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                primaries[dev].charged = bytes;
            }
        }
    }
    if (result == CUDA_SUCCESS) primaries[dev].handle = *pctx;
    pthread_mutex_unlock(&primary_lock);
    return result;
}

/* After a release or reset: if the primary context is gone, so are its memory and allocations. */
static void settle_primary(CUdevice dev, bool allocations_gone) {
    bool gone = !primary_active(dev);
    if ((gone || allocations_gone) && primaries[dev].handle != NULL) {
        vgpu_forget_context_allocations(primaries[dev].handle);
        vgpu_graphs_after_context_gone(primaries[dev].handle);
    }
    if (gone && primaries[dev].charged > 0) {
        release_context_bytes(dev, primaries[dev].charged);
        primaries[dev].charged = 0;
    }
}

static CUresult release_or_reset(CUdevice dev, CUresult (*operation)(CUdevice), bool resets) {
    if (operation == NULL) return VGPU_CONFIG_REFUSED;
    if (!vgpu_active() || !vgpu_ordinal_limited(dev)) return operation(dev);
    pthread_mutex_lock(&primary_lock);
    CUresult result = operation(dev);
    if (result == CUDA_SUCCESS) settle_primary(dev, resets);
    pthread_mutex_unlock(&primary_lock);
    return result;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return release_or_reset(dev, real.cuDevicePrimaryCtxRelease, false); }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return release_or_reset(dev, real.cuDevicePrimaryCtxRelease_v2, false); }
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return release_or_reset(dev, real.cuDevicePrimaryCtxReset, true); }
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return release_or_reset(dev, real.cuDevicePrimaryCtxReset_v2, true); }
