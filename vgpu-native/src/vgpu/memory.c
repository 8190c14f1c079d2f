/* Memory limits: every allocation path books its bytes against the device's limit before the driver
 * allocates (so racing processes cannot overcommit), and every free path gives them back after the
 * driver freed. Frees of memory this library did not count are forwarded untouched.
 *
 * Bookings are made twice: privately, in this process's memory, where the limit bounds what the process
 * itself holds whatever another process writes into the shared region; and in the region, where the
 * same limit bounds what the container's processes hold together.
 *
 * What is counted, per CUDA ordinal:
 *   cuMemAlloc_v2, cuMemAllocManaged        the requested bytes
 *   cuMemAllocPitch_v2                      pitch * height, with the pitch the driver chose
 *   cuMemAllocAsync, cuMemAllocFromPoolAsync the requested bytes, on the device the pointer lives on;
 *                                           given back when the stream reaches cuMemFreeAsync, not when it
 *                                           is enqueued (an event recorded after the free tells when)
 *   cuMemCreate (device location)           the requested bytes, until cuMemRelease
 *   cuArrayCreate_v2, cuArray3DCreate_v2    width * height * depth * channels * element size
 *   cuMipmappedArrayCreate                  the sum of its levels
 *   contexts                                the memory the driver used to create them (context.c)
 *   graphs' allocation nodes                where the driver reserves their memory (graph.c)
 * Host memory (cuMemAllocHost, cuMemHostAlloc, cuMemHostRegister) is not device memory and is not. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/arrays.h"
#include "common/log.h"
#include "common/ptrmap.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

enum tracked_kind { TRACKED_DEVICE, TRACKED_ASYNC, TRACKED_VMM, TRACKED_ARRAY };

struct tracked {
    uint64_t bytes;
    int ordinal;
    enum tracked_kind kind;
    CUcontext context; /* freed with it; NULL for memory that outlives contexts */
};

VGPU_MUTEX(tracking_lock);
static struct vgpu_ptrmap pointers;   /* device pointers */
static struct vgpu_ptrmap vmm_handles; /* CUmemGenericAllocationHandle values */
static struct vgpu_ptrmap arrays;      /* CUarray and CUmipmappedArray handles */

/* What this process holds per device, contexts included: kept where no other process can write. */
static _Atomic uint64_t booked[VGPU_MAX_DEVICES];

/* Stream-ordered frees enqueued but not yet reached by their streams: their bytes are still booked. */
struct pending_free {
    struct tracked *entry;
    CUevent event;      /* recorded on the stream right after the free; NULL: the stream itself is asked */
    CUstream stream;
    bool per_thread;
    CUcontext context;  /* the stream's: its events go with it */
    struct pending_free *next;
};
static struct pending_free *pending_frees; /* under tracking_lock */
static _Atomic int pending_free_count;

static void settle_pending_frees(void);

static bool book_privately(int ordinal, uint64_t bytes, uint64_t limit) {
    uint64_t held = atomic_load_explicit(&booked[ordinal], memory_order_relaxed);
    do {
        if (limit != 0 && (bytes > limit || held > limit - bytes)) return false;
    } while (!atomic_compare_exchange_weak_explicit(&booked[ordinal], &held, held + bytes, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

/* One line per process: every later refusal has the same cause. */
static void report_corrupt(int ordinal) {
    static _Atomic int reported;
    if (atomic_exchange(&reported, 1)) return;
    const struct vgpu_region *region = runtime.region;
    if (!vgpu_region_intact(region))
        LOG_ERROR("shared region %s is corrupt (its header was overwritten); refusing every allocation",
                  runtime.config->region_path);
    else
        LOG_ERROR("shared region %s is corrupt (device %d: %llu bytes in use, above the limit of %llu); refusing every "
                  "allocation", runtime.config->region_path, ordinal,
                  (unsigned long long)atomic_load(&region->devices[vgpu_region_entry(ordinal)].memory_used),
                  (unsigned long long)runtime.devices[ordinal].memory_limit);
}

static bool reserve(int ordinal, uint64_t bytes, bool reap_and_report) {
    if (vgpu_ordinal_refused(ordinal)) { /* no context can exist there; this is the second lock */
        if (reap_and_report) LOG_INFO("device %d is refused (not among VGPU_DEVICES): no memory on it", ordinal);
        return false;
    }
    if (!vgpu_ordinal_limited(ordinal)) return true; /* beyond the 16 devices the contract can name */
    uint64_t limit = runtime.devices[ordinal].memory_limit;
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot == NULL) return false;
    if (!book_privately(ordinal, bytes, limit)) {
        if (reap_and_report)
            LOG_INFO("device %d: %llu more bytes would take this process past the limit of %llu", ordinal,
                     (unsigned long long)bytes, (unsigned long long)limit);
        return false;
    }
    enum vgpu_charge charge = vgpu_region_intact(runtime.region)
                                  ? vgpu_region_charge(runtime.region, slot, vgpu_region_entry(ordinal), bytes, limit)
                                  : VGPU_CORRUPT;
    /* Before saying no, return what killed processes still hold. */
    if (charge == VGPU_OVER_LIMIT && reap_and_report && vgpu_region_reap(runtime.region) > 0)
        charge = vgpu_region_charge(runtime.region, slot, vgpu_region_entry(ordinal), bytes, limit);
    if (charge == VGPU_CHARGED) return true;
    atomic_fetch_sub_explicit(&booked[ordinal], bytes, memory_order_relaxed);
    if (!reap_and_report) return false;
    if (charge == VGPU_CORRUPT) report_corrupt(ordinal);
    else
        LOG_INFO("device %d: %llu more bytes would exceed the limit of %llu (in use: %llu)", ordinal,
                 (unsigned long long)bytes, (unsigned long long)limit,
                 (unsigned long long)atomic_load(&runtime.region->devices[vgpu_region_entry(ordinal)].memory_used));
    return false;
}

bool vgpu_reserve(int ordinal, uint64_t bytes) {
    settle_pending_frees();
    return reserve(ordinal, bytes, true);
}
bool vgpu_reserve_quietly(int ordinal, uint64_t bytes) { return reserve(ordinal, bytes, false); }

void vgpu_unreserve(int ordinal, uint64_t bytes) {
    if (!vgpu_ordinal_limited(ordinal) || bytes == 0 || vgpu_ordinal_refused(ordinal)) return; /* nothing booked there */
    struct vgpu_region_slot *slot = atomic_load_explicit(&runtime.slot, memory_order_relaxed);
    if (slot != NULL) vgpu_region_uncharge(runtime.region, slot, vgpu_region_entry(ordinal), bytes);
    atomic_fetch_sub_explicit(&booked[ordinal], bytes, memory_order_relaxed);
}

uint64_t vgpu_usage_view(int ordinal, uint64_t limit) {
    settle_pending_frees();
    const struct vgpu_region *region = runtime.region;
    if (!vgpu_region_intact(region)) return UINT64_MAX;
    uint64_t shared = atomic_load_explicit(&region->devices[vgpu_region_entry(ordinal)].memory_used, memory_order_relaxed);
    uint64_t own = atomic_load_explicit(&booked[ordinal], memory_order_relaxed);
    if (limit != 0 && shared > limit) return UINT64_MAX;
    return shared > own ? shared : own;
}

/* The parent's allocations are not the child's: the child starts with nothing booked. */
void vgpu_memory_after_fork(void) {
    for (struct pending_free *pending = pending_frees, *next; pending != NULL; pending = next) {
        next = pending->next;
        free(pending->entry);
        free(pending);
    }
    pending_frees = NULL;
    atomic_store(&pending_free_count, 0);
    vgpu_ptrmap_clear(&pointers, free);
    vgpu_ptrmap_clear(&vmm_handles, free);
    vgpu_ptrmap_clear(&arrays, free);
    for (int i = 0; i < VGPU_MAX_DEVICES; i++) atomic_store(&booked[i], 0);
}

static bool track(struct vgpu_ptrmap *map, uint64_t key, uint64_t bytes, int ordinal, enum tracked_kind kind,
                  CUcontext context) {
    struct tracked *entry = malloc(sizeof *entry);
    if (entry == NULL) return false;
    *entry = (struct tracked){bytes, ordinal, kind, context};
    pthread_mutex_lock(&tracking_lock);
    struct tracked *previous = vgpu_ptrmap_get(map, key);
    bool stored = vgpu_ptrmap_put(map, key, entry);
    pthread_mutex_unlock(&tracking_lock);
    if (!stored) {
        free(entry);
        return false;
    }
    if (previous != NULL) { /* the address came back although we never saw it freed: freed behind our back */
        vgpu_unreserve(previous->ordinal, previous->bytes);
        free(previous);
    }
    return true;
}

static void free_device_pointer(uint64_t key) { real.cuMemFree_v2((CUdeviceptr)key); }
static void release_vmm_handle(uint64_t key) {
    if (real.cuMemRelease != NULL) real.cuMemRelease((CUmemGenericAllocationHandle)key);
}

/* Records a fresh allocation; if even that fails (out of host memory), the allocation is undone with
 * the driver and its bytes given back, so that nothing untracked stays counted or allocated. */
static CUresult commit(struct vgpu_ptrmap *map, uint64_t key, uint64_t bytes, int ordinal, enum tracked_kind kind,
                       CUcontext context, void (*undo)(uint64_t key)) {
    if (track(map, key, bytes, ordinal, kind, context)) return CUDA_SUCCESS;
    LOG_ERROR("out of host memory while tracking a device allocation; refusing it");
    undo(key);
    vgpu_unreserve(ordinal, bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Frees take their entry out of the map before the driver frees, so that no other thread can see
 * an entry whose memory is gone (the driver may hand the address out again at once). */
static struct tracked *take(struct vgpu_ptrmap *map, uint64_t key) {
    pthread_mutex_lock(&tracking_lock);
    struct tracked *entry = vgpu_ptrmap_remove(map, key);
    pthread_mutex_unlock(&tracking_lock);
    return entry;
}

/* After the driver freed (result SUCCESS) the bytes are given back; after it refused, the entry returns. */
static void finish_free(struct vgpu_ptrmap *map, uint64_t key, struct tracked *entry, CUresult result) {
    if (entry == NULL) return;
    if (result != CUDA_SUCCESS) {
        pthread_mutex_lock(&tracking_lock);
        bool stored = vgpu_ptrmap_put(map, key, entry);
        pthread_mutex_unlock(&tracking_lock);
        if (stored) return;
        /* Out of host memory: the allocation stays counted in the region until the process exits. */
        LOG_ERROR("out of host memory while keeping track of a failed free");
        free(entry);
        return;
    }
    vgpu_unreserve(entry->ordinal, entry->bytes);
    free(entry);
}

struct context_sweep {
    CUcontext context;
    uint64_t *keys;
    size_t count, capacity;
};

static void collect(uint64_t key, void *value, void *sweep_pointer) {
    struct context_sweep *sweep = sweep_pointer;
    if (((struct tracked *)value)->context != sweep->context) return;
    if (sweep->count == sweep->capacity) {
        size_t capacity = sweep->capacity ? sweep->capacity * 2 : 32;
        uint64_t *grown = realloc(sweep->keys, capacity * sizeof *grown);
        if (grown == NULL) return;
        sweep->keys = grown;
        sweep->capacity = capacity;
    }
    sweep->keys[sweep->count++] = key;
}

static void forget_in(struct vgpu_ptrmap *map, CUcontext context) {
    struct context_sweep sweep = {.context = context};
    pthread_mutex_lock(&tracking_lock);
    vgpu_ptrmap_each(map, collect, &sweep);
    struct tracked **entries = sweep.count ? malloc(sweep.count * sizeof *entries) : NULL;
    for (size_t i = 0; i < sweep.count && entries != NULL; i++) entries[i] = vgpu_ptrmap_remove(map, sweep.keys[i]);
    pthread_mutex_unlock(&tracking_lock);
    for (size_t i = 0; i < sweep.count && entries != NULL; i++) {
        vgpu_unreserve(entries[i]->ordinal, entries[i]->bytes);
        free(entries[i]);
    }
    free(entries);
    free(sweep.keys);
}

/* Takes out of the pending list the frees that are done (or, with gone_context, that belong to that
 * context, whose events went with it). Caller holds tracking_lock. */
static struct pending_free *take_finished(CUcontext gone_context) {
    struct pending_free *finished = NULL;
    for (struct pending_free **link = &pending_frees; *link != NULL;) {
        struct pending_free *pending = *link;
        bool done;
        if (gone_context != NULL) {
            done = pending->context == gone_context;
        } else if (pending->event != NULL) {
            done = real.cuEventQuery(pending->event) != CUDA_ERROR_NOT_READY; /* an error: the stream is gone */
        } else {
            __typeof__(real.cuStreamQuery) query = pending->per_thread ? real.cuStreamQuery_ptsz : real.cuStreamQuery;
            done = query == NULL || query(pending->stream) != CUDA_ERROR_NOT_READY;
        }
        if (!done) {
            link = &pending->next;
            continue;
        }
        *link = pending->next;
        pending->next = finished;
        finished = pending;
        atomic_fetch_sub(&pending_free_count, 1);
    }
    return finished;
}

static void give_back(struct pending_free *finished, bool destroy_events) {
    while (finished != NULL) {
        struct pending_free *next = finished->next;
        if (finished->event != NULL && destroy_events) real.cuEventDestroy_v2(finished->event);
        vgpu_unreserve(finished->entry->ordinal, finished->entry->bytes);
        free(finished->entry);
        free(finished);
        finished = next;
    }
}

static void settle_pending_frees(void) {
    if (__builtin_expect(atomic_load_explicit(&pending_free_count, memory_order_acquire) == 0, 1)) return;
    pthread_mutex_lock(&tracking_lock);
    struct pending_free *finished = take_finished(NULL);
    pthread_mutex_unlock(&tracking_lock);
    give_back(finished, true);
}

void vgpu_memory_housekeeping(void) { settle_pending_frees(); }

void vgpu_forget_context_allocations(CUcontext context) {
    forget_in(&pointers, context);
    forget_in(&arrays, context);
    if (atomic_load(&pending_free_count) > 0) {
        pthread_mutex_lock(&tracking_lock);
        struct pending_free *gone = take_finished(context);
        pthread_mutex_unlock(&tracking_lock);
        give_back(gone, false);
    }
}

static CUcontext current_context(void) {
    CUcontext context = NULL;
    return real.cuCtxGetCurrent != NULL && real.cuCtxGetCurrent(&context) == CUDA_SUCCESS ? context : NULL;
}

/* Reserve, allocate, track; undo the reservation when the driver fails. */
static CUresult allocate_counted(int ordinal, uint64_t bytes, enum tracked_kind kind, CUdeviceptr *pointer,
                                 CUresult (*allocate)(void *arguments), void *arguments) {
    if (!vgpu_reserve(ordinal, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = allocate(arguments);
    if (result != CUDA_SUCCESS) {
        vgpu_unreserve(ordinal, bytes);
        return result;
    }
    return commit(&pointers, *pointer, bytes, ordinal, kind, current_context(), free_device_pointer);
}

/* ---- cuMemAlloc, managed, pitched ---------------------------------------------------------- */

struct alloc_arguments {
    CUdeviceptr *pointer;
    size_t bytes;
    unsigned flags;
};

static CUresult call_alloc(void *arguments) {
    struct alloc_arguments *a = arguments;
    return real.cuMemAlloc_v2(a->pointer, a->bytes);
}

static CUresult call_alloc_managed(void *arguments) {
    struct alloc_arguments *a = arguments;
    return real.cuMemAllocManaged(a->pointer, a->bytes, a->flags);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    if (!vgpu_active() || dptr == NULL || bytesize == 0)
        return real.cuMemAlloc_v2 ? real.cuMemAlloc_v2(dptr, bytesize) : VGPU_CONFIG_REFUSED;
    int ordinal = 0;
    CUresult result = vgpu_current_ordinal(&ordinal);
    if (result != CUDA_SUCCESS) return result;
    struct alloc_arguments arguments = {dptr, bytesize, 0};
    return allocate_counted(ordinal, bytesize, TRACKED_DEVICE, dptr, call_alloc, &arguments);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    if (!vgpu_active() || dptr == NULL || bytesize == 0)
        return real.cuMemAllocManaged ? real.cuMemAllocManaged(dptr, bytesize, flags) : VGPU_CONFIG_REFUSED;
    int ordinal = 0;
    CUresult result = vgpu_current_ordinal(&ordinal);
    if (result != CUDA_SUCCESS) return result;
    struct alloc_arguments arguments = {dptr, bytesize, flags};
    return allocate_counted(ordinal, bytesize, TRACKED_DEVICE, dptr, call_alloc_managed, &arguments);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
    if (!vgpu_active() || dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0)
        return real.cuMemAllocPitch_v2 ? real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes)
                                       : VGPU_CONFIG_REFUSED;
    int ordinal = 0;
    CUresult result = vgpu_current_ordinal(&ordinal);
    if (result != CUDA_SUCCESS) return result;
    /* The pitch is known only afterwards: reserve for the widest alignment drivers use (512 bytes),
     * then settle on the exact pitch * height. */
    size_t estimate_pitch = (WidthInBytes + 511) / 512 * 512;
    if (Height > UINT64_MAX / estimate_pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t reserved = (uint64_t)estimate_pitch * Height;
    if (!vgpu_reserve(ordinal, reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
    result = real.cuMemAllocPitch_v2(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (result != CUDA_SUCCESS) {
        vgpu_unreserve(ordinal, reserved);
        return result;
    }
    uint64_t actual = (uint64_t)*pPitch * Height;
    if (actual < reserved) vgpu_unreserve(ordinal, reserved - actual);
    else if (actual > reserved && !vgpu_reserve(ordinal, actual - reserved)) {
        real.cuMemFree_v2(*dptr);
        vgpu_unreserve(ordinal, reserved);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return commit(&pointers, *dptr, actual, ordinal, TRACKED_DEVICE, current_context(), free_device_pointer);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
    if (real.cuMemFree_v2 == NULL) return VGPU_CONFIG_REFUSED;
    struct tracked *entry = (vgpu_active() && dptr != 0) ? take(&pointers, dptr) : NULL;
    CUresult result = real.cuMemFree_v2(dptr); /* untracked pointers are the driver's to judge */
    finish_free(&pointers, dptr, entry, result);
    return result;
}

/* ---- stream-ordered allocation ------------------------------------------------------------- */

static bool capturing(CUstream stream, bool per_thread) {
    return atomic_load_explicit(&vgpu_capturing_streams, memory_order_relaxed) > 0 &&
           vgpu_stream_capturing(per_thread && stream == NULL ? CU_STREAM_PER_THREAD : stream);
}

/* The pool may live on another device than the stream's; the pointer tells where the bytes went. */
static CUresult settle_device(CUdeviceptr pointer, uint64_t bytes, int *ordinal) {
    int actual = *ordinal;
    if (real.cuPointerGetAttribute == NULL ||
        real.cuPointerGetAttribute(&actual, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer) != CUDA_SUCCESS ||
        actual == *ordinal)
        return CUDA_SUCCESS;
    if (!vgpu_reserve(actual, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    vgpu_unreserve(*ordinal, bytes);
    *ordinal = actual;
    return CUDA_SUCCESS;
}

static CUresult allocate_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream, bool from_pool,
                               bool per_thread) {
    __typeof__(real.cuMemAllocAsync) plain = per_thread ? real.cuMemAllocAsync_ptsz : real.cuMemAllocAsync;
    __typeof__(real.cuMemAllocFromPoolAsync) pooled = per_thread ? real.cuMemAllocFromPoolAsync_ptsz : real.cuMemAllocFromPoolAsync;
    if ((from_pool ? (void *)pooled : (void *)plain) == NULL) return VGPU_CONFIG_REFUSED;
    /* Recorded into a graph by stream capture: the graph's memory is counted when the graph runs. */
    if (!vgpu_active() || dptr == NULL || bytesize == 0 || capturing(hStream, per_thread))
        return from_pool ? pooled(dptr, bytesize, pool, hStream) : plain(dptr, bytesize, hStream);
    int ordinal = 0;
    CUresult result = vgpu_stream_ordinal(hStream, &ordinal);
    if (result != CUDA_SUCCESS) return result;
    if (!vgpu_reserve(ordinal, bytesize)) return CUDA_ERROR_OUT_OF_MEMORY;
    result = from_pool ? pooled(dptr, bytesize, pool, hStream) : plain(dptr, bytesize, hStream);
    if (result != CUDA_SUCCESS) {
        vgpu_unreserve(ordinal, bytesize);
        return result;
    }
    if (settle_device(*dptr, bytesize, &ordinal) != CUDA_SUCCESS) {
        __typeof__(real.cuMemFreeAsync) undo = per_thread ? real.cuMemFreeAsync_ptsz : real.cuMemFreeAsync;
        if (undo != NULL) undo(*dptr, hStream);
        else real.cuMemFree_v2(*dptr);
        vgpu_unreserve(ordinal, bytesize);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return commit(&pointers, *dptr, bytesize, ordinal, TRACKED_ASYNC, NULL, free_device_pointer);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return allocate_async(dptr, bytesize, NULL, hStream, false, false);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return allocate_async(dptr, bytesize, NULL, hStream, false, true);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    return allocate_async(dptr, bytesize, pool, hStream, true, false);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    return allocate_async(dptr, bytesize, pool, hStream, true, true);
}

/* An event recorded on the stream right after a free, in the stream's context; NULL if none can be. */
static CUevent event_after(CUstream stream, bool per_thread, CUcontext *context) {
    *context = NULL;
    __typeof__(real.cuEventRecord) record = per_thread ? real.cuEventRecord_ptsz : real.cuEventRecord;
    if (real.cuEventCreate == NULL || real.cuEventQuery == NULL || real.cuEventDestroy_v2 == NULL || record == NULL)
        return NULL;
    bool pushed = false;
    if (stream != NULL && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD && real.cuStreamGetCtx != NULL) {
        if (real.cuStreamGetCtx(stream, context) != CUDA_SUCCESS || real.cuCtxPushCurrent_v2(*context) != CUDA_SUCCESS)
            return NULL;
        pushed = true;
    } else {
        real.cuCtxGetCurrent(context);
    }
    CUevent event = NULL;
    if (real.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
        event = NULL;
    } else if (record(event, stream) != CUDA_SUCCESS) {
        real.cuEventDestroy_v2(event);
        event = NULL;
    }
    CUcontext popped = NULL;
    if (pushed) real.cuCtxPopCurrent_v2(&popped);
    return event;
}

/* The bytes stay booked until the stream has reached the free. */
static void give_back_when_reached(struct tracked *entry, CUstream stream, bool per_thread) {
    struct pending_free *pending = malloc(sizeof *pending);
    if (pending == NULL) {
        LOG_ERROR("out of host memory while waiting for a stream-ordered free; its bytes are given back at once");
        vgpu_unreserve(entry->ordinal, entry->bytes);
        free(entry);
        return;
    }
    *pending = (struct pending_free){.entry = entry, .stream = stream, .per_thread = per_thread};
    pending->event = event_after(stream, per_thread, &pending->context);
    pthread_mutex_lock(&tracking_lock);
    pending->next = pending_frees;
    pending_frees = pending;
    atomic_fetch_add_explicit(&pending_free_count, 1, memory_order_release);
    pthread_mutex_unlock(&tracking_lock);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
    __typeof__(real.cuMemFreeAsync) free_function = per_thread ? real.cuMemFreeAsync_ptsz : real.cuMemFreeAsync;
    if (free_function == NULL) return VGPU_CONFIG_REFUSED;
    /* A captured free becomes a free node of a graph, which frees graph memory only. */
    struct tracked *entry = (vgpu_active() && dptr != 0 && !capturing(hStream, per_thread)) ? take(&pointers, dptr) : NULL;
    CUresult result = free_function(dptr, hStream);
    if (entry != NULL && result == CUDA_SUCCESS) give_back_when_reached(entry, hStream, per_thread);
    else finish_free(&pointers, dptr, entry, result);
    return result;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream, false); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream, true); }

/* ---- virtual memory management ------------------------------------------------------------- */

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    if (real.cuMemCreate == NULL) return VGPU_CONFIG_REFUSED;
    /* The device comes from the properties, never from the calling thread's context (worker threads
     * of NCCL and others call this without one). Host locations are not device memory. */
    if (vgpu_active() && prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
        vgpu_ordinal_refused(prop->location.id))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!vgpu_active() || handle == NULL || prop == NULL || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        prop->location.id < 0 || prop->location.id >= runtime.device_count)
        return real.cuMemCreate(handle, size, prop, flags);
    int ordinal = prop->location.id;
    if (!vgpu_reserve(ordinal, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = real.cuMemCreate(handle, size, prop, flags);
    if (result != CUDA_SUCCESS) {
        vgpu_unreserve(ordinal, size);
        return result;
    }
    return commit(&vmm_handles, *handle, size, ordinal, TRACKED_VMM, NULL, release_vmm_handle);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    if (real.cuMemRelease == NULL) return VGPU_CONFIG_REFUSED;
    struct tracked *entry = vgpu_active() ? take(&vmm_handles, handle) : NULL;
    CUresult result = real.cuMemRelease(handle);
    finish_free(&vmm_handles, handle, entry, result);
    return result;
}

/* ---- arrays -------------------------------------------------------------------------------- */

/* Bytes of one array level; height 0 means 1D and depth 0 means 2D. Saturates instead of wrapping. */
static uint64_t array_bytes(size_t width, size_t height, size_t depth, CUarray_format format, unsigned channels) {
    uint64_t element = vgpu_array_format_bytes(format);
    uint64_t bytes = (element ? element : 4) * (channels ? channels : 1); /* unknown formats: the driver judges them */
    size_t extents[3] = {width, height ? height : 1, depth ? depth : 1};
    for (int i = 0; i < 3; i++) {
        if (extents[i] != 0 && bytes > UINT64_MAX / extents[i]) return UINT64_MAX;
        bytes *= extents[i];
    }
    return bytes;
}

static CUresult create_array_counted(void *handle_out, uint64_t bytes, CUresult (*create)(void *), void *arguments) {
    int ordinal = 0;
    CUresult result = vgpu_current_ordinal(&ordinal);
    if (result != CUDA_SUCCESS) return result;
    if (!vgpu_reserve(ordinal, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    result = create(arguments);
    if (result != CUDA_SUCCESS) {
        vgpu_unreserve(ordinal, bytes);
        return result;
    }
    uint64_t key = (uint64_t)(uintptr_t)*(void **)handle_out;
    if (!track(&arrays, key, bytes, ordinal, TRACKED_ARRAY, current_context())) {
        LOG_ERROR("out of host memory while tracking an array; its bytes stay counted until the context ends");
    }
    return CUDA_SUCCESS;
}

struct array_arguments {
    CUarray *handle;
    const void *descriptor;
};

static CUresult call_array_create(void *arguments) {
    struct array_arguments *a = arguments;
    return real.cuArrayCreate_v2(a->handle, a->descriptor);
}

static CUresult call_array3d_create(void *arguments) {
    struct array_arguments *a = arguments;
    return real.cuArray3DCreate_v2(a->handle, a->descriptor);
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
    if (!vgpu_active() || pHandle == NULL || pAllocateArray == NULL)
        return real.cuArrayCreate_v2 ? real.cuArrayCreate_v2(pHandle, pAllocateArray) : VGPU_CONFIG_REFUSED;
    uint64_t bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, 0, pAllocateArray->Format,
                                 pAllocateArray->NumChannels);
    struct array_arguments arguments = {pHandle, pAllocateArray};
    return create_array_counted(pHandle, bytes, call_array_create, &arguments);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
    if (!vgpu_active() || pHandle == NULL || pAllocateArray == NULL)
        return real.cuArray3DCreate_v2 ? real.cuArray3DCreate_v2(pHandle, pAllocateArray) : VGPU_CONFIG_REFUSED;
    uint64_t bytes = array_bytes(pAllocateArray->Width, pAllocateArray->Height, pAllocateArray->Depth,
                                 pAllocateArray->Format, pAllocateArray->NumChannels);
    struct array_arguments arguments = {pHandle, pAllocateArray};
    return create_array_counted(pHandle, bytes, call_array3d_create, &arguments);
}

struct mipmap_arguments {
    CUmipmappedArray *handle;
    const CUDA_ARRAY3D_DESCRIPTOR *descriptor;
    unsigned levels;
};

static CUresult call_mipmap_create(void *arguments) {
    struct mipmap_arguments *a = arguments;
    return real.cuMipmappedArrayCreate(a->handle, a->descriptor, a->levels);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
    if (!vgpu_active() || pHandle == NULL || pMipmappedArrayDesc == NULL || numMipmapLevels == 0 || numMipmapLevels > 64)
        return real.cuMipmappedArrayCreate ? real.cuMipmappedArrayCreate(pHandle, pMipmappedArrayDesc, numMipmapLevels)
                                           : VGPU_CONFIG_REFUSED;
    uint64_t bytes = 0;
    for (unsigned level = 0; level < numMipmapLevels; level++) {
        uint64_t level_bytes = array_bytes(vgpu_mipmap_extent(pMipmappedArrayDesc->Width, level),
                                           vgpu_mipmap_extent(pMipmappedArrayDesc->Height, level),
                                           vgpu_mipmap_extent(pMipmappedArrayDesc->Depth, level), pMipmappedArrayDesc->Format,
                                           pMipmappedArrayDesc->NumChannels);
        bytes = (UINT64_MAX - bytes < level_bytes) ? UINT64_MAX : bytes + level_bytes;
    }
    struct mipmap_arguments arguments = {pHandle, pMipmappedArrayDesc, numMipmapLevels};
    return create_array_counted(pHandle, bytes, call_mipmap_create, &arguments);
}

static CUresult destroy_array(void *handle, CUresult (*destroy)(void *handle)) {
    uint64_t key = (uint64_t)(uintptr_t)handle;
    struct tracked *entry = vgpu_active() ? take(&arrays, key) : NULL;
    CUresult result = destroy(handle);
    finish_free(&arrays, key, entry, result);
    return result;
}

static CUresult call_array_destroy(void *handle) { return real.cuArrayDestroy((CUarray)handle); }
static CUresult call_mipmap_destroy(void *handle) { return real.cuMipmappedArrayDestroy((CUmipmappedArray)handle); }

CUresult cuArrayDestroy(CUarray hArray) {
    return real.cuArrayDestroy ? destroy_array(hArray, call_array_destroy) : VGPU_CONFIG_REFUSED;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
    return real.cuMipmappedArrayDestroy ? destroy_array(hMipmappedArray, call_mipmap_destroy) : VGPU_CONFIG_REFUSED;
}

/* ---- what programs see --------------------------------------------------------------------- */

/* The limit as total, the container's usage subtracted for free, and never more free memory than
 * the device really has. Without a limit the driver's numbers pass through. */
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
    if (real.cuMemGetInfo_v2 == NULL) return VGPU_CONFIG_REFUSED;
    size_t driver_free = 0, driver_total = 0;
    /* Ask for exactly the outputs the caller asked for, so NULL handling is the driver's. */
    CUresult result = real.cuMemGetInfo_v2(free != NULL ? &driver_free : NULL, total != NULL ? &driver_total : NULL);
    if (result != CUDA_SUCCESS || !vgpu_active()) {
        if (result == CUDA_SUCCESS) {
            if (free != NULL) *free = driver_free;
            if (total != NULL) *total = driver_total;
        }
        return result;
    }
    int ordinal = 0;
    bool known = vgpu_current_ordinal(&ordinal) == CUDA_SUCCESS;
    if (known && vgpu_ordinal_refused(ordinal)) { /* a refused card has no memory for this container */
        if (free != NULL) *free = 0;
        if (total != NULL) *total = 0;
        return CUDA_SUCCESS;
    }
    uint64_t limit = (known && vgpu_ordinal_limited(ordinal)) ? runtime.devices[ordinal].memory_limit : 0;
    if (limit == 0) {
        if (free != NULL) *free = driver_free;
        if (total != NULL) *total = driver_total;
        return CUDA_SUCCESS;
    }
    if (total == NULL) real.cuDeviceTotalMem_v2(&driver_total, ordinal); /* required: present after cuInit */
    /* With CUDA_OVERSUBSCRIBE the limit may exceed the device; otherwise the device caps it. */
    uint64_t shown_total = (!runtime.config->oversubscribe && driver_total != 0 && driver_total < limit) ? driver_total : limit;
    if (total != NULL) *total = (size_t)shown_total;
    if (free != NULL) {
        uint64_t used = vgpu_usage_view(ordinal, limit);
        uint64_t available = used < shown_total ? shown_total - used : 0; /* never underflows */
        *free = (size_t)(available < driver_free ? available : driver_free);
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (real.cuDeviceTotalMem_v2 == NULL) return VGPU_CONFIG_REFUSED;
    CUresult result = real.cuDeviceTotalMem_v2(bytes, dev);
    if (result != CUDA_SUCCESS || !vgpu_active()) return result;
    /* A refused card reads as one without memory rather than as an error: the CUDA runtime queries
     * every visible card when it starts, and must still start for the granted ones. */
    if (vgpu_ordinal_refused(dev)) *bytes = 0;
    if (!vgpu_ordinal_limited(dev)) return result;
    uint64_t limit = runtime.devices[dev].memory_limit;
    if (limit != 0 && (runtime.config->oversubscribe || limit < *bytes)) *bytes = (size_t)limit;
    return CUDA_SUCCESS;
}

