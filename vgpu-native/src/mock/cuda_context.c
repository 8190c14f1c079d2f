/* Mock driver: contexts (created and primary), the per-thread context stack, streams and events.
 * Work completes in virtual time: each stream remembers when its last queued kernel ends, and
 * waiting means sleeping until then. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "mock/cuda_internal.h"

static __thread struct mock_context *context_stack[MOCK_CONTEXT_STACK_DEPTH];
static __thread int context_depth;

/* One per-thread default stream per context the thread used; keyed by context id so a destroyed
 * context's entry is never matched again. */
#define PER_THREAD_STREAMS 8
static __thread struct {
    uint64_t context_id;
    struct mock_stream *stream;
} per_thread_streams[PER_THREAD_STREAMS];

struct mock_context *mock_current_context(void) {
    return context_depth > 0 ? context_stack[context_depth - 1] : NULL;
}

static bool context_valid(const struct mock_context *context) {
    return context != NULL && context->magic == MOCK_CONTEXT_MAGIC && context->active;
}

CUresult mock_require_context(struct mock_context **context) {
    MOCK_REQUIRE_INIT();
    struct mock_context *current = mock_current_context();
    if (!context_valid(current)) return CUDA_ERROR_INVALID_CONTEXT;
    *context = current;
    return CUDA_SUCCESS;
}

void mock_wait_until(uint64_t time_ns) {
    if (time_ns > vgpu_now_ns()) vgpu_sleep_until_ns(time_ns);
}

static void raise_to(_Atomic uint64_t *target, uint64_t value) {
    uint64_t current = atomic_load_explicit(target, memory_order_relaxed);
    while (current < value && !atomic_compare_exchange_weak(target, &current, value)) {
    }
}

void mock_stream_mark(struct mock_stream *stream, uint64_t end_ns) {
    raise_to(&stream->last_end_ns, end_ns);
    raise_to(&stream->context->last_end_ns, end_ns);
}

static void stream_init(struct mock_stream *stream, struct mock_context *context, unsigned flags, int priority,
                        bool per_thread) {
    memset(stream, 0, sizeof *stream);
    stream->magic = MOCK_STREAM_MAGIC;
    stream->context = context;
    stream->flags = flags;
    stream->priority = priority;
    stream->per_thread = per_thread;
    stream->id = mock_next_id();
}

static void context_setup(struct mock_context *context, int ordinal, unsigned flags, bool primary) {
    pthread_mutex_init(&context->lock, NULL);
    context->magic = MOCK_CONTEXT_MAGIC;
    context->ordinal = ordinal;
    context->physical = mock_physical(ordinal);
    context->flags = flags;
    context->primary = primary;
    context->id = mock_next_id();
    context->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    context->limits[CU_LIMIT_STACK_SIZE] = 1024;
    context->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    context->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    context->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    context->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    context->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
    context->limits[CU_LIMIT_SHMEM_SIZE] = (size_t)mock_driver.devices[ordinal]->architecture->shared_memory_per_block_optin;
    stream_init(&context->legacy_stream, context, CU_STREAM_DEFAULT, 0, false);
}

void mock_context_init_primary(int ordinal) {
    struct mock_context *context = &mock_driver.primary[ordinal];
    memset(context, 0, sizeof *context);
    context_setup(context, ordinal, CU_CTX_SCHED_AUTO, true);
}

/* A context occupies device memory from creation to destruction, as on a real GPU. */
static CUresult charge_context(struct mock_context *context) {
    uint64_t bytes = mock_driver.config->context_bytes;
    if (bytes > 0 && !mock_state_charge(mock_driver.state, mock_driver.process, context->physical, bytes,
                                        mock_capacity_bytes(context->ordinal))) {
        mock_state_reap(mock_driver.state);
        if (!mock_state_charge(mock_driver.state, mock_driver.process, context->physical, bytes,
                               mock_capacity_bytes(context->ordinal)))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    context->charged_bytes = bytes;
    atomic_fetch_add(&mock_driver.process->devices[context->physical].contexts, 1);
    return CUDA_SUCCESS;
}

static void uncharge_context(struct mock_context *context) {
    if (context->charged_bytes > 0)
        mock_state_uncharge(mock_driver.state, mock_driver.process, context->physical, context->charged_bytes);
    context->charged_bytes = 0;
    atomic_fetch_sub(&mock_driver.process->devices[context->physical].contexts, 1);
}

void mock_context_release_resources(struct mock_context *context) {
    mock_wait_until(atomic_load(&context->last_end_ns));
    mock_release_due_frees();
    pthread_mutex_lock(&context->lock);
    for (struct mock_stream *stream = context->streams; stream != NULL; stream = stream->next) mock_capture_abandon(stream);
    mock_capture_abandon(&context->legacy_stream);
    pthread_mutex_unlock(&context->lock);
    mock_free_context_allocations(context);
    mock_graphs_release_context(context);
    pthread_mutex_lock(&context->lock);
    struct mock_stream *stream = context->streams;
    struct mock_event *event = context->events;
    struct mock_module *module = context->modules;
    context->streams = NULL;
    context->events = NULL;
    context->modules = NULL;
    /* A new id orphans every thread's per-thread stream entry for the freed streams. */
    context->id = mock_next_id();
    pthread_mutex_unlock(&context->lock);
    while (stream != NULL) {
        struct mock_stream *next = stream->next;
        stream->magic = MOCK_DEAD_MAGIC;
        free(stream);
        stream = next;
    }
    while (event != NULL) {
        struct mock_event *next = event->next;
        event->magic = MOCK_DEAD_MAGIC;
        free(event);
        event = next;
    }
    while (module != NULL) {
        struct mock_module *next = module->next;
        mock_module_destroy(module);
        module = next;
    }
}

/* ---- context stack ------------------------------------------------------------------------- */

static void remove_from_all_stacks_of_this_thread(struct mock_context *context) {
    int kept = 0;
    for (int i = 0; i < context_depth; i++)
        if (context_stack[i] != context) context_stack[kept++] = context_stack[i];
    context_depth = kept;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    *pctx = (CUcontext)mock_current_context();
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    MOCK_REQUIRE_INIT();
    struct mock_context *context = (struct mock_context *)ctx;
    if (context != NULL && !context_valid(context)) return CUDA_ERROR_INVALID_CONTEXT;
    if (context == NULL) {
        if (context_depth > 0) context_depth--;
    } else if (context_depth == 0) {
        context_stack[context_depth++] = context;
    } else {
        context_stack[context_depth - 1] = context;
    }
    return CUDA_SUCCESS;
}

static CUresult push_context(CUcontext ctx) {
    MOCK_REQUIRE_INIT();
    struct mock_context *context = (struct mock_context *)ctx;
    if (!context_valid(context)) return CUDA_ERROR_INVALID_CONTEXT;
    if (context_depth == MOCK_CONTEXT_STACK_DEPTH) return CUDA_ERROR_INVALID_VALUE;
    context_stack[context_depth++] = context;
    return CUDA_SUCCESS;
}

static CUresult pop_context(CUcontext *pctx) {
    MOCK_REQUIRE_INIT();
    if (context_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct mock_context *context = context_stack[--context_depth];
    if (pctx != NULL) *pctx = (CUcontext)context;
    return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) { return push_context(ctx); }
CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return push_context(ctx); }
CUresult cuCtxPopCurrent(CUcontext *pctx) { return pop_context(pctx); }
CUresult cuCtxPopCurrent_v2(CUcontext *pctx) { return pop_context(pctx); }

/* ---- created contexts ---------------------------------------------------------------------- */

static CUresult create_context(CUcontext *pctx, unsigned flags, CUdevice dev) {
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if ((flags & ~(unsigned)CU_CTX_FLAGS_MASK) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (mock_device_lost(dev)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    struct mock_context *context = calloc(1, sizeof *context);
    if (context == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    context_setup(context, dev, flags, false);
    CUresult result = charge_context(context);
    if (result != CUDA_SUCCESS) {
        free(context);
        return result;
    }
    context->active = true;
    if (context_depth == MOCK_CONTEXT_STACK_DEPTH) context_depth--; /* the oldest binding gives way */
    context_stack[context_depth++] = context;
    *pctx = (CUcontext)context;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) { return create_context(pctx, flags, dev); }
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) { return create_context(pctx, flags, dev); }

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
                        CUdevice dev) {
    if (numParams < 0 || (numParams > 0 && paramsArray == NULL)) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < numParams; i++)
        if (paramsArray[i].type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return create_context(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev) {
    if (ctxCreateParams != NULL) {
        if (ctxCreateParams->cigParams != NULL) return CUDA_ERROR_NOT_SUPPORTED; /* no graphics interop here */
        if (ctxCreateParams->numExecAffinityParams < 0 ||
            (ctxCreateParams->numExecAffinityParams > 0 && ctxCreateParams->execAffinityParams == NULL))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return create_context(pctx, flags, dev);
}

static CUresult destroy_context(CUcontext ctx) {
    MOCK_REQUIRE_INIT();
    struct mock_context *context = (struct mock_context *)ctx;
    if (!context_valid(context) || context->primary) return CUDA_ERROR_INVALID_CONTEXT;
    mock_context_release_resources(context);
    uncharge_context(context);
    remove_from_all_stacks_of_this_thread(context);
    context->magic = MOCK_DEAD_MAGIC;
    context->active = false;
    pthread_mutex_destroy(&context->lock);
    free(context);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) { return destroy_context(ctx); }
CUresult cuCtxDestroy_v2(CUcontext ctx) { return destroy_context(ctx); }

/* ---- primary contexts ---------------------------------------------------------------------- */

static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if (mock_device_lost(dev)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    struct mock_context *context = &mock_driver.primary[dev];
    CUresult result = CUDA_SUCCESS;
    pthread_mutex_lock(&primary_lock);
    if (!context->active) {
        result = charge_context(context);
        if (result == CUDA_SUCCESS) context->active = true;
    }
    if (result == CUDA_SUCCESS) context->primary_retains++;
    pthread_mutex_unlock(&primary_lock);
    if (result == CUDA_SUCCESS) *pctx = (CUcontext)context;
    return result;
}

static CUresult release_primary(CUdevice dev) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_context *context = &mock_driver.primary[dev];
    pthread_mutex_lock(&primary_lock);
    if (context->primary_retains == 0) {
        pthread_mutex_unlock(&primary_lock);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    bool last = --context->primary_retains == 0;
    if (last) {
        mock_context_release_resources(context);
        uncharge_context(context);
        context->active = false;
        remove_from_all_stacks_of_this_thread(context);
    }
    pthread_mutex_unlock(&primary_lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return release_primary(dev); }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return release_primary(dev); }

static CUresult reset_primary(CUdevice dev) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_context *context = &mock_driver.primary[dev];
    pthread_mutex_lock(&primary_lock);
    if (context->active) mock_context_release_resources(context);
    pthread_mutex_unlock(&primary_lock);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return reset_primary(dev); }
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return reset_primary(dev); }

static CUresult set_primary_flags(CUdevice dev, unsigned flags) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    if ((flags & ~(unsigned)CU_CTX_FLAGS_MASK) != 0) return CUDA_ERROR_INVALID_VALUE;
    mock_driver.primary[dev].flags = flags;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) { return set_primary_flags(dev, flags); }
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) { return set_primary_flags(dev, flags); }

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = mock_driver.primary[dev].flags;
    *active = mock_driver.primary[dev].active;
    return CUDA_SUCCESS;
}

/* ---- context queries ----------------------------------------------------------------------- */

static CUresult context_or_current(CUcontext ctx, struct mock_context **context) {
    if (ctx == NULL) return mock_require_context(context);
    MOCK_REQUIRE_INIT();
    if (!context_valid((struct mock_context *)ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    *context = (struct mock_context *)ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result == CUDA_SUCCESS) *device = context->ordinal;
    return result;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = context_or_current(ctx, &context);
    if (result == CUDA_SUCCESS) *device = context->ordinal;
    return result;
}

static CUresult synchronize_context(struct mock_context *context) {
    if (mock_device_lost(context->ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    mock_wait_until(atomic_load(&context->last_end_ns));
    mock_release_due_frees();
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    return result == CUDA_SUCCESS ? synchronize_context(context) : result;
}

CUresult cuCtxSynchronize_v2(CUcontext ctx) {
    struct mock_context *context = NULL;
    CUresult result = context_or_current(ctx, &context);
    return result == CUDA_SUCCESS ? synchronize_context(context) : result;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
    if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = context_or_current(ctx, &context);
    if (result == CUDA_SUCCESS) *version = 3020; /* every context of this driver uses the 3.2 API */
    return result;
}

CUresult cuCtxGetFlags(unsigned int *flags) {
    if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result == CUDA_SUCCESS) *flags = context->flags;
    return result;
}

CUresult cuCtxSetFlags(unsigned int flags) {
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if ((flags & ~(unsigned)CU_CTX_FLAGS_MASK) != 0) return CUDA_ERROR_INVALID_VALUE;
    context->flags = flags;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
    if (ctxId == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = context_or_current(ctx, &context);
    if (result == CUDA_SUCCESS) *ctxId = context->id;
    return result;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit) {
    if (pvalue == NULL || (int)limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result == CUDA_SUCCESS) *pvalue = context->limits[limit];
    return result;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
    if ((int)limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (limit == CU_LIMIT_CIG_ENABLED || limit == CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED) return CUDA_ERROR_UNSUPPORTED_LIMIT;
    context->limits[limit] = value;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig) {
    if (pconfig == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result == CUDA_SUCCESS) *pconfig = context->cache_config;
    return result;
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
    if ((int)config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result == CUDA_SUCCESS) context->cache_config = config;
    return result;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (leastPriority != NULL) *leastPriority = 0;
    if (greatestPriority != NULL) *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_context *peer = (struct mock_context *)peerContext;
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (!context_valid(peer)) return CUDA_ERROR_INVALID_CONTEXT;
    int can = 0;
    if (peer->ordinal == context->ordinal || cuDeviceCanAccessPeer(&can, context->ordinal, peer->ordinal) != CUDA_SUCCESS || !can)
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    return context_valid((struct mock_context *)peerContext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- streams ------------------------------------------------------------------------------- */

static struct mock_stream *per_thread_stream(struct mock_context *context) {
    for (int i = 0; i < PER_THREAD_STREAMS; i++)
        if (per_thread_streams[i].stream != NULL && per_thread_streams[i].context_id == context->id)
            return per_thread_streams[i].stream;
    struct mock_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return NULL;
    stream_init(stream, context, CU_STREAM_DEFAULT, 0, true);
    pthread_mutex_lock(&context->lock);
    stream->next = context->streams;
    context->streams = stream;
    pthread_mutex_unlock(&context->lock);
    /* Reuse the slot of a context this thread no longer has current, oldest first. */
    int victim = 0;
    for (int i = 0; i < PER_THREAD_STREAMS; i++)
        if (per_thread_streams[i].stream == NULL) { victim = i; break; }
    per_thread_streams[victim].context_id = context->id;
    per_thread_streams[victim].stream = stream;
    return stream;
}

CUresult mock_resolve_stream(CUstream handle, bool per_thread_default, struct mock_stream **stream) {
    if (handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
        struct mock_context *context = NULL;
        CUresult result = mock_require_context(&context);
        if (result != CUDA_SUCCESS) return result;
        bool per_thread = handle == CU_STREAM_PER_THREAD || (handle == NULL && per_thread_default);
        *stream = per_thread ? per_thread_stream(context) : &context->legacy_stream;
        return *stream != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    }
    MOCK_REQUIRE_INIT();
    struct mock_stream *candidate = (struct mock_stream *)handle;
    if (candidate->magic != MOCK_STREAM_MAGIC || !context_valid(candidate->context)) return CUDA_ERROR_INVALID_HANDLE;
    *stream = candidate;
    return CUDA_SUCCESS;
}

static CUresult create_stream(CUstream *phStream, unsigned flags, int priority) {
    if (phStream == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    /* Priorities are clamped into the context's range [-5, 0], as the driver does. */
    stream_init(stream, context, flags, priority > 0 ? 0 : priority < -5 ? -5 : priority, false);
    pthread_mutex_lock(&context->lock);
    stream->next = context->streams;
    context->streams = stream;
    pthread_mutex_unlock(&context->lock);
    *phStream = (CUstream)stream;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) { return create_stream(phStream, Flags, 0); }
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
    return create_stream(phStream, flags, priority);
}

static CUresult destroy_stream(CUstream hStream) {
    MOCK_REQUIRE_INIT();
    struct mock_stream *stream = (struct mock_stream *)hStream;
    if (stream == NULL || stream == (struct mock_stream *)CU_STREAM_LEGACY ||
        stream == (struct mock_stream *)CU_STREAM_PER_THREAD || stream->magic != MOCK_STREAM_MAGIC || stream->per_thread)
        return CUDA_ERROR_INVALID_HANDLE;
    struct mock_context *context = stream->context;
    pthread_mutex_lock(&context->lock);
    struct mock_stream **link = &context->streams;
    while (*link != NULL && *link != stream) link = &(*link)->next;
    bool found = *link != NULL;
    if (found) *link = stream->next;
    pthread_mutex_unlock(&context->lock);
    if (!found) return CUDA_ERROR_INVALID_HANDLE;
    /* Work already queued still completes; destroying does not wait for it. */
    mock_capture_abandon(stream);
    stream->magic = MOCK_DEAD_MAGIC;
    free(stream);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) { return destroy_stream(hStream); }
CUresult cuStreamDestroy_v2(CUstream hStream) { return destroy_stream(hStream); }

/* Legacy-stream semantics: the NULL stream waits for all blocking work of its context. */
static uint64_t stream_completion(const struct mock_stream *stream) {
    return (!stream->per_thread && stream == &stream->context->legacy_stream) ? atomic_load(&stream->context->last_end_ns)
                                                                              : atomic_load(&stream->last_end_ns);
}

static CUresult synchronize_stream(CUstream hStream, bool per_thread_default) {
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (stream->capture != NULL) return mock_capture_unsupported(stream);
    if (mock_device_lost(stream->context->ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    mock_wait_until(stream_completion(stream));
    mock_release_due_frees();
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) { return synchronize_stream(hStream, false); }
CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return synchronize_stream(hStream, true); }

static CUresult query_stream(CUstream hStream, bool per_thread_default) {
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (stream->capture != NULL) return mock_capture_unsupported(stream);
    mock_release_due_frees();
    return vgpu_now_ns() >= stream_completion(stream) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamQuery(CUstream hStream) { return query_stream(hStream, false); }
CUresult cuStreamQuery_ptsz(CUstream hStream) { return query_stream(hStream, true); }

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned flags, bool per_thread_default) {
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS) return result;
    struct mock_event *event = (struct mock_event *)hEvent;
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    if (event == NULL || event->magic != MOCK_EVENT_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    if (stream->capture != NULL) return mock_capture_unsupported(stream);
    if (event->recorded) mock_stream_mark(stream, event->time_ns);
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return stream_wait_event(hStream, hEvent, Flags, false);
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    return stream_wait_event(hStream, hEvent, Flags, true);
}

#define STREAM_QUERY(name, per_thread, type, param, expression)                  \
    CUresult name(CUstream hStream, type *param) {                              \
        if (param == NULL) return CUDA_ERROR_INVALID_VALUE;                     \
        struct mock_stream *stream = NULL;                                      \
        CUresult result = mock_resolve_stream(hStream, per_thread, &stream);    \
        if (result == CUDA_SUCCESS) *param = (expression);                      \
        return result;                                                          \
    }

STREAM_QUERY(cuStreamGetPriority, false, int, priority, stream->priority)
STREAM_QUERY(cuStreamGetPriority_ptsz, true, int, priority, stream->priority)
STREAM_QUERY(cuStreamGetFlags, false, unsigned int, flags, stream->flags)
STREAM_QUERY(cuStreamGetFlags_ptsz, true, unsigned int, flags, stream->flags)
STREAM_QUERY(cuStreamGetId, false, unsigned long long, streamId, stream->id)
STREAM_QUERY(cuStreamGetId_ptsz, true, unsigned long long, streamId, stream->id)
STREAM_QUERY(cuStreamGetCtx, false, CUcontext, pctx, (CUcontext)stream->context)
STREAM_QUERY(cuStreamGetCtx_ptsz, true, CUcontext, pctx, (CUcontext)stream->context)
STREAM_QUERY(cuStreamGetDevice, false, CUdevice, device, stream->context->ordinal)
STREAM_QUERY(cuStreamGetDevice_ptsz, true, CUdevice, device, stream->context->ordinal)

static CUresult stream_context_v2(CUstream hStream, CUcontext *pctx, CUgreenCtx *pGreenCtx, bool per_thread) {
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    *pctx = (CUcontext)stream->context;
    if (pGreenCtx != NULL) *pGreenCtx = NULL; /* the mock has no green contexts */
    return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pctx, CUgreenCtx *pGreenCtx) {
    return stream_context_v2(hStream, pctx, pGreenCtx, false);
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pctx, CUgreenCtx *pGreenCtx) {
    return stream_context_v2(hStream, pctx, pGreenCtx, true);
}

/* ---- events -------------------------------------------------------------------------------- */

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    if (phEvent == NULL) return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_event *event = calloc(1, sizeof *event);
    if (event == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    event->magic = MOCK_EVENT_MAGIC;
    event->flags = Flags;
    event->context = context;
    pthread_mutex_lock(&context->lock);
    event->next = context->events;
    context->events = event;
    pthread_mutex_unlock(&context->lock);
    *phEvent = (CUevent)event;
    return CUDA_SUCCESS;
}

static struct mock_event *event_of(CUevent handle) {
    struct mock_event *event = (struct mock_event *)handle;
    return (event != NULL && event->magic == MOCK_EVENT_MAGIC) ? event : NULL;
}

static CUresult record_event(CUevent hEvent, CUstream hStream, bool per_thread_default) {
    MOCK_REQUIRE_INIT();
    struct mock_event *event = event_of(hEvent);
    if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread_default, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (stream->capture != NULL) return mock_capture_unsupported(stream);
    uint64_t now = vgpu_now_ns(), done = stream_completion(stream);
    event->time_ns = done > now ? done : now;
    event->recorded = true;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return record_event(hEvent, hStream, false); }
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) { return record_event(hEvent, hStream, true); }
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return flags > 1 ? CUDA_ERROR_INVALID_VALUE : record_event(hEvent, hStream, false);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return flags > 1 ? CUDA_ERROR_INVALID_VALUE : record_event(hEvent, hStream, true);
}

CUresult cuEventQuery(CUevent hEvent) {
    MOCK_REQUIRE_INIT();
    struct mock_event *event = event_of(hEvent);
    if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
    mock_release_due_frees();
    return (!event->recorded || vgpu_now_ns() >= event->time_ns) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
    MOCK_REQUIRE_INIT();
    struct mock_event *event = event_of(hEvent);
    if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (event->recorded) mock_wait_until(event->time_ns);
    mock_release_due_frees();
    return CUDA_SUCCESS;
}

static CUresult elapsed_time(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    if (pMilliseconds == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_event *start = event_of(hStart), *end = event_of(hEnd);
    if (start == NULL || end == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = vgpu_now_ns();
    if (now < start->time_ns || now < end->time_ns) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float)(((double)end->time_ns - (double)start->time_ns) / 1e6);
    return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return elapsed_time(pMilliseconds, hStart, hEnd);
}
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    return elapsed_time(pMilliseconds, hStart, hEnd);
}

static CUresult destroy_event(CUevent hEvent) {
    MOCK_REQUIRE_INIT();
    struct mock_event *event = event_of(hEvent);
    if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
    struct mock_context *context = event->context;
    pthread_mutex_lock(&context->lock);
    struct mock_event **link = &context->events;
    while (*link != NULL && *link != event) link = &(*link)->next;
    bool found = *link != NULL;
    if (found) *link = event->next;
    pthread_mutex_unlock(&context->lock);
    if (!found) return CUDA_ERROR_INVALID_HANDLE;
    event->magic = MOCK_DEAD_MAGIC;
    free(event);
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) { return destroy_event(hEvent); }
CUresult cuEventDestroy_v2(CUevent hEvent) { return destroy_event(hEvent); }
