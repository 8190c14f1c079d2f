/* CUDA graphs: their launches are paced under a compute limit, and the memory their allocation nodes
 * take is counted against the memory limit where the driver takes it.
 *
 * Pacing: a graph launch costs what launching its kernel nodes one by one would cost, the sum of their
 * threads, counted from the graph when it is instantiated. Work captured into a graph (stream capture)
 * is not paced when it is recorded, only when the graph runs.
 *
 * Memory: the driver backs an executable graph's allocation nodes with device memory from its graph
 * pool when the graph is uploaded or first launched (cuGraphUpload, cuGraphLaunch,
 * cuGraphInstantiateWithParams with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD), not when it is instantiated,
 * and keeps it after the graph completes (even after cuGraphExecDestroy) until cuDeviceGraphMemTrim
 * gives back what no graph holds, or the context goes. So libvgpu books there: before a graph whose
 * memory may not be mapped is uploaded or launched, the most the pool can grow (the graph's allocation
 * bytes less what the pool holds unused) is booked, refusing the launch with CUDA_ERROR_OUT_OF_MEMORY
 * over the limit; afterwards, and after every trim, executable-graph destruction and context
 * destruction, the booking is settled to what the driver says its pool reserves
 * (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/ptrmap.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

/* Cost of a launch of a graph whose kernels libvgpu could not count (a driver without the graph query
 * functions): a mid-sized grid; the controller's measurements correct the rest. */
#define UNCOUNTED_GRAPH_THREADS 65536ULL

struct exec_record {
    CUcontext context;
    uint64_t threads;                   /* of all its kernel nodes */
    uint64_t memory[VGPU_MAX_DEVICES];  /* bytes of its allocation nodes, per device */
    bool has_memory;
    bool mapped;                        /* uploaded or launched since the last trim */
};

struct graph_shape {
    uint64_t threads;
    uint64_t memory[VGPU_MAX_DEVICES];
    bool has_memory;
};

VGPU_MUTEX(graph_lock);
static struct vgpu_ptrmap records;               /* CUgraphExec -> struct exec_record */
static uint64_t graph_booked[VGPU_MAX_DEVICES];  /* what this process booked for the driver's graph pools */

/* ---- what a graph holds ------------------------------------------------------------------------ */

static uint64_t kernel_node_threads(CUgraphNode node) {
    if (real.cuGraphKernelNodeGetParams_v2 != NULL) {
        CUDA_KERNEL_NODE_PARAMS_v2 p;
        if (real.cuGraphKernelNodeGetParams_v2(node, &p) == CUDA_SUCCESS)
            return (uint64_t)p.gridDimX * p.gridDimY * p.gridDimZ * ((uint64_t)p.blockDimX * p.blockDimY * p.blockDimZ);
    }
    if (real.cuGraphKernelNodeGetParams != NULL) {
        CUDA_KERNEL_NODE_PARAMS_v1 p;
        if (real.cuGraphKernelNodeGetParams(node, &p) == CUDA_SUCCESS)
            return (uint64_t)p.gridDimX * p.gridDimY * p.gridDimZ * ((uint64_t)p.blockDimX * p.blockDimY * p.blockDimZ);
    }
    return UNCOUNTED_GRAPH_THREADS;
}

/* A driver without cuGraphMemAllocNodeGetParams predates graph memory nodes (CUDA 11.4). */
static void describe(CUgraph graph, struct graph_shape *shape) {
    memset(shape, 0, sizeof *shape);
    size_t count = 0;
    if (real.cuGraphGetNodes == NULL || real.cuGraphNodeGetType == NULL || real.cuGraphGetNodes(graph, NULL, &count) != CUDA_SUCCESS) {
        shape->threads = UNCOUNTED_GRAPH_THREADS;
        return;
    }
    CUgraphNode *nodes = count > 0 ? malloc(count * sizeof *nodes) : NULL;
    if (count > 0 && (nodes == NULL || real.cuGraphGetNodes(graph, nodes, &count) != CUDA_SUCCESS)) {
        free(nodes);
        shape->threads = UNCOUNTED_GRAPH_THREADS;
        return;
    }
    for (size_t i = 0; i < count; i++) {
        CUgraphNodeType type;
        if (nodes[i] == NULL || real.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS) continue;
        if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
            shape->threads += kernel_node_threads(nodes[i]);
        } else if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && real.cuGraphMemAllocNodeGetParams != NULL) {
            CUDA_MEM_ALLOC_NODE_PARAMS p;
            if (real.cuGraphMemAllocNodeGetParams(nodes[i], &p) == CUDA_SUCCESS && vgpu_ordinal_limited(p.poolProps.location.id)) {
                shape->memory[p.poolProps.location.id] += p.bytesize;
                shape->has_memory = true;
            }
        }
    }
    free(nodes);
}

static void remember(CUgraphExec exec, const struct graph_shape *shape, bool mapped) {
    struct exec_record *record = malloc(sizeof *record);
    if (record == NULL) {
        LOG_ERROR("out of host memory while recording a graph; its launches are paced as a mid-sized grid");
        return;
    }
    CUcontext context = NULL;
    if (real.cuCtxGetCurrent != NULL) real.cuCtxGetCurrent(&context);
    *record = (struct exec_record){.context = context, .threads = shape->threads, .has_memory = shape->has_memory,
                                   .mapped = mapped};
    memcpy(record->memory, shape->memory, sizeof record->memory);
    pthread_mutex_lock(&graph_lock);
    struct exec_record *previous = vgpu_ptrmap_remove(&records, (uint64_t)(uintptr_t)exec);
    bool stored = vgpu_ptrmap_put(&records, (uint64_t)(uintptr_t)exec, record);
    pthread_mutex_unlock(&graph_lock);
    free(previous);
    if (!stored) free(record);
}

/* ---- graph memory ---------------------------------------------------------------------------- */

static bool pool_attribute(int ordinal, CUgraphMem_attribute attribute, uint64_t *value) {
    cuuint64_t bytes = 0;
    if (real.cuDeviceGetGraphMemAttribute == NULL || real.cuDeviceGetGraphMemAttribute(ordinal, attribute, &bytes) != CUDA_SUCCESS)
        return false;
    *value = bytes;
    return true;
}

/* Makes the booking of a device's graph pool what the driver reserves. Caller holds graph_lock. */
static void settle(int ordinal) {
    uint64_t reserved = 0;
    if (!vgpu_ordinal_limited(ordinal) || !pool_attribute(ordinal, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved)) return;
    uint64_t booked = graph_booked[ordinal];
    if (reserved < booked) {
        vgpu_unreserve(ordinal, booked - reserved);
    } else if (reserved > booked && !vgpu_reserve_quietly(ordinal, reserved - booked)) {
        /* The driver took more than the most it could have: count what fits, say so once. */
        static _Atomic int reported;
        if (!atomic_exchange(&reported, 1))
            LOG_ERROR("device %d: the driver's graph pool reserves %llu bytes, more than libvgpu booked (%llu) and more "
                      "than the limit allows", ordinal, (unsigned long long)reserved, (unsigned long long)booked);
        return;
    }
    graph_booked[ordinal] = reserved;
}

/* Books, before an upload or launch that may map record's memory, the most the pools can grow by:
 * its bytes less what each pool holds that no graph uses. Caller holds graph_lock. */
static bool book_before_mapping(const struct exec_record *record) {
    for (int ordinal = 0; ordinal < VGPU_MAX_DEVICES; ordinal++) {
        if (record->memory[ordinal] == 0) continue;
        settle(ordinal);
        uint64_t reserved = 0, used = 0;
        pool_attribute(ordinal, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved);
        pool_attribute(ordinal, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used);
        uint64_t unused = reserved > used ? reserved - used : 0;
        uint64_t growth = record->memory[ordinal] > unused ? record->memory[ordinal] - unused : 0;
        if (!vgpu_reserve(ordinal, growth)) {
            for (int undo = 0; undo < ordinal; undo++) settle(undo);
            return false;
        }
        graph_booked[ordinal] += growth;
    }
    return true;
}

static void settle_record_devices(const struct exec_record *record) {
    for (int ordinal = 0; ordinal < VGPU_MAX_DEVICES; ordinal++)
        if (record->memory[ordinal] > 0) settle(ordinal);
}

/* Runs an upload or a launch of exec: when its memory may have to be mapped, with the pools' growth
 * booked before and settled after. */
static CUresult with_memory(CUgraphExec exec, CUresult (*operation)(CUgraphExec, CUstream), CUstream stream) {
    pthread_mutex_lock(&graph_lock);
    struct exec_record *record = vgpu_ptrmap_get(&records, (uint64_t)(uintptr_t)exec);
    if (record == NULL || !record->has_memory || record->mapped) {
        pthread_mutex_unlock(&graph_lock);
        return operation(exec, stream);
    }
    if (!book_before_mapping(record)) {
        pthread_mutex_unlock(&graph_lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = operation(exec, stream);
    if (result == CUDA_SUCCESS) record->mapped = true;
    settle_record_devices(record);
    pthread_mutex_unlock(&graph_lock);
    return result;
}

struct context_sweep {
    CUcontext context;
    uint64_t keys[256];
    size_t count;
};

static void collect_of_context(uint64_t key, void *value, void *sweep_pointer) {
    struct context_sweep *sweep = sweep_pointer;
    if (((struct exec_record *)value)->context == sweep->context && sweep->count < 256) sweep->keys[sweep->count++] = key;
}

/* The context's executable graphs went with it; the driver's pools keep what it says they keep. */
void vgpu_graphs_after_context_gone(CUcontext context) {
    if (!vgpu_active()) return;
    struct context_sweep sweep = {.context = context};
    pthread_mutex_lock(&graph_lock);
    do {
        sweep.count = 0;
        vgpu_ptrmap_each(&records, collect_of_context, &sweep);
        for (size_t i = 0; i < sweep.count; i++) free(vgpu_ptrmap_remove(&records, sweep.keys[i]));
    } while (sweep.count == 256);
    for (int ordinal = 0; ordinal < VGPU_MAX_DEVICES; ordinal++)
        if (graph_booked[ordinal] > 0) settle(ordinal);
    pthread_mutex_unlock(&graph_lock);
}

void vgpu_graphs_after_fork(void) {
    vgpu_ptrmap_clear(&records, free);
    memset(graph_booked, 0, sizeof graph_booked);
    atomic_store(&vgpu_capturing_streams, 0);
}

/* ---- stream capture ---------------------------------------------------------------------------- */

bool vgpu_stream_capturing(CUstream stream) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return real.cuStreamIsCapturing != NULL && real.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
           status != CU_STREAM_CAPTURE_STATUS_NONE;
}

static CUresult began(CUresult result) {
    if (result == CUDA_SUCCESS) atomic_fetch_add(&vgpu_capturing_streams, 1);
    return result;
}

/* A capture ends with its graph or, invalidated, without one; either way the stream captures no more. */
static CUresult ended(CUresult result) {
    if (result == CUDA_SUCCESS || result == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
        int count = atomic_load(&vgpu_capturing_streams);
        while (count > 0 && !atomic_compare_exchange_weak(&vgpu_capturing_streams, &count, count - 1)) {
        }
    }
    return result;
}

CUresult cuStreamBeginCapture(CUstream hStream) {
    return real.cuStreamBeginCapture ? began(real.cuStreamBeginCapture(hStream)) : VGPU_CONFIG_REFUSED;
}
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
    return real.cuStreamBeginCapture_ptsz ? began(real.cuStreamBeginCapture_ptsz(hStream)) : VGPU_CONFIG_REFUSED;
}
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
    return real.cuStreamBeginCapture_v2 ? began(real.cuStreamBeginCapture_v2(hStream, mode)) : VGPU_CONFIG_REFUSED;
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    return real.cuStreamBeginCapture_v2_ptsz ? began(real.cuStreamBeginCapture_v2_ptsz(hStream, mode)) : VGPU_CONFIG_REFUSED;
}
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    return real.cuStreamEndCapture ? ended(real.cuStreamEndCapture(hStream, phGraph)) : VGPU_CONFIG_REFUSED;
}
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) {
    return real.cuStreamEndCapture_ptsz ? ended(real.cuStreamEndCapture_ptsz(hStream, phGraph)) : VGPU_CONFIG_REFUSED;
}

/* ---- instantiation ----------------------------------------------------------------------------- */

static CUresult instantiated(CUresult result, CUgraphExec *phGraphExec, const struct graph_shape *shape) {
    if (result == CUDA_SUCCESS && vgpu_active() && phGraphExec != NULL) remember(*phGraphExec, shape, false);
    return result;
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                            size_t bufferSize) {
    if (real.cuGraphInstantiate == NULL) return VGPU_CONFIG_REFUSED;
    struct graph_shape shape;
    if (vgpu_active()) describe(hGraph, &shape);
    return instantiated(real.cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), phGraphExec, &shape);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize) {
    if (real.cuGraphInstantiate_v2 == NULL) return VGPU_CONFIG_REFUSED;
    struct graph_shape shape;
    if (vgpu_active()) describe(hGraph, &shape);
    return instantiated(real.cuGraphInstantiate_v2(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize), phGraphExec,
                        &shape);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    if (real.cuGraphInstantiateWithFlags == NULL) return VGPU_CONFIG_REFUSED;
    struct graph_shape shape;
    if (vgpu_active()) describe(hGraph, &shape);
    return instantiated(real.cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags), phGraphExec, &shape);
}

/* With CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD the driver maps the graph's memory while instantiating. */
static CUresult instantiate_with_params(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                        __typeof__(real.cuGraphInstantiateWithParams) instantiate) {
    if (instantiate == NULL) return VGPU_CONFIG_REFUSED;
    if (!vgpu_active() || params == NULL || phGraphExec == NULL) return instantiate(phGraphExec, hGraph, params);
    struct graph_shape shape;
    describe(hGraph, &shape);
    if (!(params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) || !shape.has_memory)
        return instantiated(instantiate(phGraphExec, hGraph, params), phGraphExec, &shape);
    struct exec_record pending = {.threads = shape.threads, .has_memory = true};
    memcpy(pending.memory, shape.memory, sizeof pending.memory);
    pthread_mutex_lock(&graph_lock);
    if (!book_before_mapping(&pending)) {
        pthread_mutex_unlock(&graph_lock);
        params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = instantiate(phGraphExec, hGraph, params);
    settle_record_devices(&pending);
    pthread_mutex_unlock(&graph_lock);
    if (result == CUDA_SUCCESS) remember(*phGraphExec, &shape, true);
    return result;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, real.cuGraphInstantiateWithParams);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, real.cuGraphInstantiateWithParams_ptsz);
}

/* ---- upload, launch, destruction, trim --------------------------------------------------------- */

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
    if (real.cuGraphUpload == NULL) return VGPU_CONFIG_REFUSED;
    return vgpu_active() ? with_memory(hGraphExec, real.cuGraphUpload, hStream) : real.cuGraphUpload(hGraphExec, hStream);
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
    if (real.cuGraphUpload_ptsz == NULL) return VGPU_CONFIG_REFUSED;
    return vgpu_active() ? with_memory(hGraphExec, real.cuGraphUpload_ptsz, hStream)
                         : real.cuGraphUpload_ptsz(hGraphExec, hStream);
}

static uint64_t threads_of_exec(CUgraphExec exec) {
    pthread_mutex_lock(&graph_lock);
    const struct exec_record *record = vgpu_ptrmap_get(&records, (uint64_t)(uintptr_t)exec);
    uint64_t threads = record != NULL ? record->threads : UNCOUNTED_GRAPH_THREADS;
    pthread_mutex_unlock(&graph_lock);
    return threads;
}

static CUresult launch(CUgraphExec exec, CUstream stream, __typeof__(real.cuGraphLaunch) driver_launch, bool per_thread) {
    if (driver_launch == NULL) return VGPU_CONFIG_REFUSED;
    if (!vgpu_active()) return driver_launch(exec, stream);
    if (atomic_load_explicit(&runtime.any_sm_limit, memory_order_relaxed))
        vgpu_sm_gate(per_thread && stream == NULL ? CU_STREAM_PER_THREAD : stream, threads_of_exec(exec));
    if (!atomic_load_explicit(&runtime.launched, memory_order_relaxed)) atomic_store(&runtime.launched, 1);
    return with_memory(exec, driver_launch, stream);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, real.cuGraphLaunch, false);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, real.cuGraphLaunch_ptsz, true);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
    if (real.cuGraphExecDestroy == NULL) return VGPU_CONFIG_REFUSED;
    CUresult result = real.cuGraphExecDestroy(hGraphExec);
    if (result != CUDA_SUCCESS || !vgpu_active()) return result;
    pthread_mutex_lock(&graph_lock);
    struct exec_record *record = vgpu_ptrmap_remove(&records, (uint64_t)(uintptr_t)hGraphExec);
    if (record != NULL) settle_record_devices(record); /* the driver may give the memory back now, or keep it */
    pthread_mutex_unlock(&graph_lock);
    free(record);
    return result;
}

static void forget_mapping(uint64_t key, void *value, void *ordinal_pointer) {
    (void)key;
    struct exec_record *record = value;
    if (record->memory[*(int *)ordinal_pointer] > 0) record->mapped = false;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
    if (real.cuDeviceGraphMemTrim == NULL) return VGPU_CONFIG_REFUSED;
    CUresult result = real.cuDeviceGraphMemTrim(device);
    if (result != CUDA_SUCCESS || !vgpu_active()) return result;
    pthread_mutex_lock(&graph_lock);
    /* Graphs that were not running may have lost their memory: their next launch may map it again. */
    vgpu_ptrmap_each(&records, forget_mapping, &device);
    settle(device);
    pthread_mutex_unlock(&graph_lock);
    return result;
}
