/* Mock driver: CUDA graphs and stream capture.
 *
 * A graph is its nodes in creation order; a node depends only on nodes created before it, so creation
 * order is an order in which they may run. Nodes: kernels (their parameter values copied when the node
 * is made, as the driver does), empty nodes, memory allocation and free nodes, and, from stream capture,
 * 1D copies and memsets. Instantiation copies the nodes into the executable graph; a launch runs them in
 * order on its stream: kernels occupy the device on the virtual clock one after the other (reference
 * kernels compute), allocations become live and are freed as their nodes are reached.
 *
 * Graph memory, as the driver manages it: an allocation node gets its virtual address when it is made
 * (address space only). The device memory behind an executable graph's allocations is taken from the
 * device's graph pool at its first launch or upload, growing the pool from the device when it holds too
 * little, and stays mapped to that graph. Destroying the executable graph leaves its memory in the pool;
 * cuDeviceGraphMemTrim gives back to the device what no graph holds: memory mapped to an executable
 * graph whose launches have all completed, and not backing a live allocation. A graph whose memory was
 * trimmed maps it again at its next launch. A graph with memory nodes has at most one executable graph
 * at a time.
 *
 * Stream capture records kernel launches, cuMemAllocAsync/cuMemAllocFromPoolAsync and cuMemFreeAsync
 * (as allocation and free nodes; a captured free must name a graph allocation) and 1D copies and memsets
 * enqueued on the capturing stream, chained in stream order. Anything else on a capturing stream (event
 * record or wait, 2D/3D copies, synchronising or querying it, launching a graph into it) returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture: cuStreamEndCapture then returns
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. Capture modes are accepted; their rules between threads are not
 * enforced. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "mock/cuda_internal.h"

struct mock_graph_allocation {
    CUdeviceptr base;
    size_t size, mapped_size;
    int ordinal;
    bool live;                          /* between reaching its allocation node and being freed */
    struct mock_graph_exec *exec;       /* the executable graph holding its allocation node, if any */
    unsigned references;                /* its node, executable graph steps, free nodes, being live */
    struct mock_graph_allocation *next; /* in the registry */
};

struct mock_graph_node {
    uint32_t magic;
    CUgraphNodeType type;
    struct mock_graph *graph;
    bool root;
    union {
        struct {
            const struct mock_function *function;
            struct mock_kernel_geometry geometry;
            unsigned shared_bytes;
            struct mock_kernel_arguments *arguments;
            CUkernel kernel;
            CUcontext context;
        } kernel;
        struct {
            CUDA_MEM_ALLOC_NODE_PARAMS params;
            struct mock_graph_allocation *allocation;
        } alloc;
        struct {
            struct mock_graph_allocation *allocation;
        } release;
        struct {
            void *destination;
            const void *source;
            size_t bytes;
            bool destination_is_device, source_is_device;
        } copy;
        struct {
            CUdeviceptr destination;
            size_t pitch, element_bytes, width, height;
            unsigned value;
        } fill;
    } u;
};

struct mock_graph {
    uint32_t magic;
    struct mock_context *context;       /* current when it was made; destroyed with it */
    struct mock_graph_node **nodes;
    size_t count, capacity;
    bool has_memory_nodes;
    struct mock_graph_exec *memory_exec; /* the one executable graph of a graph with memory nodes */
    struct mock_graph *next;
};

struct mock_graph_exec {
    uint32_t magic;
    struct mock_context *context;
    struct mock_graph *graph;           /* NULL once the graph is destroyed */
    struct mock_graph_node *steps;      /* copies of the graph's nodes, in order */
    size_t count;
    bool auto_free;
    bool mapped;                        /* its allocations' memory is taken from the pool */
    uint64_t footprint[MOCK_MAX_DEVICES];
    uint64_t last_end_ns;               /* when its last launch completes, in virtual time */
    struct mock_graph_exec *next;
};

struct mock_capture {
    struct mock_graph *graph;
    struct mock_graph_node *last;       /* the next recorded node depends on it */
    bool invalidated;
};

/* Under mock_driver.graph_lock. */
static struct mock_graph *graphs;
static struct mock_graph_exec *execs;
static struct mock_graph_allocation *allocations;

#define LOCK() pthread_mutex_lock(&mock_driver.graph_lock)
#define UNLOCK() pthread_mutex_unlock(&mock_driver.graph_lock)

/* Takes item out of the list at head, linked through ->next. */
#define UNLINK(head, item)                                                                \
    for (__typeof__(item) *link_ = &(head); *link_ != NULL; link_ = &(*link_)->next)      \
        if (*link_ == (item)) {                                                           \
            *link_ = (item)->next;                                                        \
            break;                                                                        \
        }

static struct mock_graph *graph_of(CUgraph handle) {
    struct mock_graph *graph = (struct mock_graph *)handle;
    return graph != NULL && graph->magic == MOCK_GRAPH_MAGIC ? graph : NULL;
}

static struct mock_graph_node *node_of(CUgraphNode handle) {
    struct mock_graph_node *node = (struct mock_graph_node *)handle;
    return node != NULL && node->magic == MOCK_GRAPH_NODE_MAGIC ? node : NULL;
}

static const struct mock_graph_node *node_of_type(CUgraphNode handle, CUgraphNodeType type) {
    const struct mock_graph_node *node = node_of(handle);
    return node != NULL && node->type == type ? node : NULL;
}

static struct mock_graph_exec *exec_of(CUgraphExec handle) {
    struct mock_graph_exec *exec = (struct mock_graph_exec *)handle;
    return exec != NULL && exec->magic == MOCK_GRAPH_EXEC_MAGIC ? exec : NULL;
}

/* ---- graph allocations ------------------------------------------------------------------------ */

static void allocation_unreference(struct mock_graph_allocation *allocation) {
    if (allocation == NULL || --allocation->references > 0) return;
    UNLINK(allocations, allocation);
    munmap((void *)(uintptr_t)allocation->base, allocation->mapped_size);
    free(allocation);
}

static struct mock_graph_allocation *allocation_at(CUdeviceptr base) {
    for (struct mock_graph_allocation *allocation = allocations; allocation != NULL; allocation = allocation->next)
        if (allocation->base == base) return allocation;
    return NULL;
}

void mock_graph_allocation_freed(struct mock_graph_allocation *allocation) {
    LOCK();
    allocation->live = false;
    allocation_unreference(allocation);
    UNLOCK();
}

/* ---- the graph pools ---------------------------------------------------------------------------- */

/* Memory of the device that graphs hold now: executable graphs mapped to the pool, and live
 * allocations whose executable graph is not (destroyed, or trimmed while the allocation lived on). */
static uint64_t pool_in_use(int ordinal) {
    uint64_t bytes = 0;
    for (struct mock_graph_exec *exec = execs; exec != NULL; exec = exec->next)
        if (exec->mapped) bytes += exec->footprint[ordinal];
    for (struct mock_graph_allocation *allocation = allocations; allocation != NULL; allocation = allocation->next)
        if (allocation->live && allocation->ordinal == ordinal && (allocation->exec == NULL || !allocation->exec->mapped))
            bytes += allocation->size;
    return bytes;
}

static void note_highs(int ordinal) {
    struct mock_graph_pool *pool = &mock_driver.graph_pools[ordinal];
    uint64_t used = pool_in_use(ordinal);
    if (used > pool->used_high) pool->used_high = used;
    if (pool->reserved > pool->reserved_high) pool->reserved_high = pool->reserved;
}

/* Takes an executable graph's memory from the pools, growing them from the devices as needed. */
static CUresult map_exec(struct mock_graph_exec *exec) {
    if (exec->mapped) return CUDA_SUCCESS;
    exec->mapped = true;
    uint64_t grown[MOCK_MAX_DEVICES] = {0};
    for (int ordinal = 0; ordinal < mock_driver.count; ordinal++) {
        if (exec->footprint[ordinal] == 0) continue;
        struct mock_graph_pool *pool = &mock_driver.graph_pools[ordinal];
        uint64_t needed = pool_in_use(ordinal);
        if (needed > pool->reserved) {
            if (mock_device_lost(ordinal) || !mock_charge_device(ordinal, needed - pool->reserved)) {
                for (int undo = 0; undo < ordinal; undo++) {
                    mock_uncharge_device(undo, grown[undo]);
                    mock_driver.graph_pools[undo].reserved -= grown[undo];
                }
                exec->mapped = false;
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            grown[ordinal] = needed - pool->reserved;
            pool->reserved = needed;
        }
        note_highs(ordinal);
    }
    return CUDA_SUCCESS;
}

static bool exec_idle(const struct mock_graph_exec *exec, uint64_t now) {
    if (exec->last_end_ns > now) return false;
    for (size_t i = 0; i < exec->count; i++)
        if (exec->steps[i].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && exec->steps[i].u.alloc.allocation->live) return false;
    return true;
}

/* Gives the device what the pool holds beyond what graphs use. */
static void trim_pool(int ordinal) {
    uint64_t now = vgpu_now_ns();
    for (struct mock_graph_exec *exec = execs; exec != NULL; exec = exec->next)
        if (exec->mapped && exec->footprint[ordinal] > 0 && exec_idle(exec, now)) exec->mapped = false;
    struct mock_graph_pool *pool = &mock_driver.graph_pools[ordinal];
    uint64_t used = pool_in_use(ordinal);
    if (pool->reserved > used) {
        mock_uncharge_device(ordinal, pool->reserved - used);
        pool->reserved = used;
    }
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(device)) return CUDA_ERROR_INVALID_DEVICE;
    mock_release_due_frees();
    LOCK();
    trim_pool(device);
    UNLOCK();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(device)) return CUDA_ERROR_INVALID_DEVICE;
    if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
    mock_release_due_frees();
    LOCK();
    struct mock_graph_pool *pool = &mock_driver.graph_pools[device];
    CUresult result = CUDA_SUCCESS;
    switch (attr) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = pool_in_use(device); break;
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = pool->used_high; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = pool->reserved; break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = pool->reserved_high; break;
        default: result = CUDA_ERROR_INVALID_VALUE;
    }
    UNLOCK();
    return result;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(device)) return CUDA_ERROR_INVALID_DEVICE;
    /* Only the high-water marks can be set, and only back to zero (that is, to the current value). */
    if (value == NULL || *(cuuint64_t *)value != 0 ||
        (attr != CU_GRAPH_MEM_ATTR_USED_MEM_HIGH && attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct mock_graph_pool *pool = &mock_driver.graph_pools[device];
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) pool->used_high = pool_in_use(device);
    else pool->reserved_high = pool->reserved;
    UNLOCK();
    return CUDA_SUCCESS;
}

/* ---- graphs and nodes ------------------------------------------------------------------------- */

static void node_release(struct mock_graph_node *node) {
    switch (node->type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: free(node->u.kernel.arguments); break;
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC: allocation_unreference(node->u.alloc.allocation); break;
        case CU_GRAPH_NODE_TYPE_MEM_FREE: allocation_unreference(node->u.release.allocation); break;
        default: break;
    }
}

static struct mock_graph *graph_new(struct mock_context *context) {
    struct mock_graph *graph = calloc(1, sizeof *graph);
    if (graph == NULL) return NULL;
    graph->magic = MOCK_GRAPH_MAGIC;
    graph->context = context;
    LOCK();
    graph->next = graphs;
    graphs = graph;
    UNLOCK();
    return graph;
}

/* Caller holds graph_lock. */
static void graph_destroy_locked(struct mock_graph *graph) {
    UNLINK(graphs, graph);
    for (size_t i = 0; i < graph->count; i++) {
        node_release(graph->nodes[i]);
        graph->nodes[i]->magic = MOCK_DEAD_MAGIC;
        free(graph->nodes[i]);
    }
    if (graph->memory_exec != NULL) graph->memory_exec->graph = NULL;
    free(graph->nodes);
    graph->magic = MOCK_DEAD_MAGIC;
    free(graph);
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
    MOCK_REQUIRE_INIT();
    if (phGraph == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    struct mock_graph *graph = graph_new(mock_current_context());
    if (graph == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = (CUgraph)graph;
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
    MOCK_REQUIRE_INIT();
    LOCK();
    struct mock_graph *graph = graph_of(hGraph);
    if (graph != NULL) graph_destroy_locked(graph);
    UNLOCK();
    return graph != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Appends a node after its dependencies (nodes of the same graph) to the graph; caller holds graph_lock. */
static CUresult add_node(struct mock_graph *graph, const CUgraphNode *dependencies, size_t count,
                         struct mock_graph_node *node) {
    if (count > 0 && dependencies == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        const struct mock_graph_node *dependency = node_of(dependencies[i]);
        if (dependency == NULL || dependency->graph != graph) return CUDA_ERROR_INVALID_VALUE;
    }
    if (graph->count == graph->capacity) {
        size_t capacity = graph->capacity ? graph->capacity * 2 : 16;
        struct mock_graph_node **grown = realloc(graph->nodes, capacity * sizeof *grown);
        if (grown == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
        graph->nodes = grown;
        graph->capacity = capacity;
    }
    node->magic = MOCK_GRAPH_NODE_MAGIC;
    node->graph = graph;
    node->root = count == 0;
    graph->nodes[graph->count++] = node;
    if (node->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || node->type == CU_GRAPH_NODE_TYPE_MEM_FREE) graph->has_memory_nodes = true;
    return CUDA_SUCCESS;
}

/* A node made from the caller's parameters (its resources taken), not in a graph yet. */
typedef CUresult (*node_maker)(const void *parameters, struct mock_graph_node **node);

/* Adds a prepared node (its own resources already taken) or releases it on failure. */
static CUresult insert(CUgraphNode *out, struct mock_graph *graph, const CUgraphNode *dependencies, size_t count,
                       struct mock_graph_node *node) {
    LOCK();
    CUresult result = graph_of((CUgraph)graph) != NULL ? add_node(graph, dependencies, count, node) : CUDA_ERROR_INVALID_VALUE;
    if (result != CUDA_SUCCESS) {
        node_release(node);
        free(node);
    } else if (out != NULL) {
        *out = (CUgraphNode)node;
    }
    UNLOCK();
    return result;
}

static int current_ordinal(void) {
    struct mock_context *context = mock_current_context();
    return context != NULL && context->magic == MOCK_CONTEXT_MAGIC ? context->ordinal : 0;
}

static CUresult make_kernel_node(const CUDA_KERNEL_NODE_PARAMS_v2 *params, struct mock_graph_node **out) {
    const struct mock_function *function = mock_function_of(params->func != NULL ? (const void *)params->func
                                                                                 : (const void *)params->kern);
    if (function == NULL || (params->kernelParams != NULL && params->extra != NULL)) return CUDA_ERROR_INVALID_VALUE;
    struct mock_kernel_geometry geometry = {{params->gridDimX, params->gridDimY, params->gridDimZ},
                                            {params->blockDimX, params->blockDimY, params->blockDimZ}};
    CUresult result = mock_launch_check(function, &geometry, params->sharedMemBytes, false, current_ordinal());
    if (result != CUDA_SUCCESS) return result;
    struct mock_kernel_arguments *arguments = mock_kernel_arguments_copy(function, params->kernelParams, params->extra, &result);
    if (result != CUDA_SUCCESS) return result;
    struct mock_graph_node *node = calloc(1, sizeof *node);
    if (node == NULL) {
        free(arguments);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    node->type = CU_GRAPH_NODE_TYPE_KERNEL;
    node->u.kernel.function = function;
    node->u.kernel.geometry = geometry;
    node->u.kernel.shared_bytes = params->sharedMemBytes;
    node->u.kernel.arguments = arguments;
    node->u.kernel.kernel = params->func != NULL ? NULL : params->kern;
    node->u.kernel.context = params->ctx;
    *out = node;
    return CUDA_SUCCESS;
}

/* What the cuGraphAdd*Node functions share: checks, makes the node, adds it after its dependencies. */
static CUresult add_made_node(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *dependencies, size_t count,
                              node_maker make, const void *parameters) {
    MOCK_REQUIRE_INIT();
    struct mock_graph *graph = graph_of(hGraph);
    if (out == NULL || graph == NULL || parameters == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_graph_node *node = NULL;
    CUresult result = make(parameters, &node);
    return result == CUDA_SUCCESS ? insert(out, graph, dependencies, count, node) : result;
}

static CUresult make_kernel_node_from(const void *parameters, struct mock_graph_node **node) {
    return make_kernel_node(parameters, node);
}

static CUresult add_kernel_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2 *params) {
    return add_made_node(phGraphNode, hGraph, dependencies, numDependencies, make_kernel_node_from, params);
}

static CUDA_KERNEL_NODE_PARAMS_v2 kernel_params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p) {
    return (CUDA_KERNEL_NODE_PARAMS_v2){p->func, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                        p->blockDimZ, p->sharedMemBytes, p->kernelParams, p->extra, NULL, NULL};
}

CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    if (nodeParams == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS_v2 params = kernel_params_v2(nodeParams);
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, &params);
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

/* The kernelParams returned point at the node's own copy of the values (reference kernels only: other
 * kernels run no code, so the mock keeps no values for them and returns NULL). */
static CUresult kernel_node_params(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *out) {
    MOCK_REQUIRE_INIT();
    const struct mock_graph_node *node = node_of_type(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (node == NULL || out == NULL) return CUDA_ERROR_INVALID_VALUE;
    const struct mock_kernel_geometry *g = &node->u.kernel.geometry;
    *out = (CUDA_KERNEL_NODE_PARAMS_v2){
        node->u.kernel.kernel == NULL ? (CUfunction)node->u.kernel.function : NULL,
        g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1], g->block[2], node->u.kernel.shared_bytes,
        node->u.kernel.arguments != NULL ? node->u.kernel.arguments->pointers : NULL, NULL, node->u.kernel.kernel,
        node->u.kernel.context};
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams) {
    CUDA_KERNEL_NODE_PARAMS_v2 params;
    if (nodeParams == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = kernel_node_params(hNode, &params);
    if (result != CUDA_SUCCESS) return result;
    if (params.func == NULL) params.func = (CUfunction)params.kern; /* the same object in the mock */
    *nodeParams = (CUDA_KERNEL_NODE_PARAMS_v1){params.func, params.gridDimX, params.gridDimY, params.gridDimZ,
                                               params.blockDimX, params.blockDimY, params.blockDimZ, params.sharedMemBytes,
                                               params.kernelParams, params.extra};
    return CUDA_SUCCESS;
}

CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams) {
    return kernel_node_params(hNode, nodeParams);
}

static CUresult make_empty_node(const void *unused, struct mock_graph_node **node) {
    (void)unused;
    *node = calloc(1, sizeof **node);
    if (*node == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    (*node)->type = CU_GRAPH_NODE_TYPE_EMPTY;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                             size_t numDependencies) {
    return add_made_node(phGraphNode, hGraph, dependencies, numDependencies, make_empty_node, "");
}

/* The allocation's address space, reserved for as long as anything refers to the allocation. */
static CUresult new_allocation(size_t bytes, int ordinal, struct mock_graph_allocation **out) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t mapped = (bytes + page - 1) / page * page;
    void *memory = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct mock_graph_allocation *allocation = memory != MAP_FAILED ? calloc(1, sizeof *allocation) : NULL;
    if (allocation == NULL) {
        if (memory != MAP_FAILED) munmap(memory, mapped);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *allocation = (struct mock_graph_allocation){.base = (CUdeviceptr)(uintptr_t)memory, .size = bytes,
                                                 .mapped_size = mapped, .ordinal = ordinal, .references = 1};
    LOCK();
    allocation->next = allocations;
    allocations = allocation;
    UNLOCK();
    *out = allocation;
    return CUDA_SUCCESS;
}

static CUresult make_alloc_node(CUDA_MEM_ALLOC_NODE_PARAMS *params, struct mock_graph_node **out) {
    const CUmemPoolProps *props = &params->poolProps;
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        props->handleTypes != CU_MEM_HANDLE_TYPE_NONE || params->bytesize == 0 ||
        (params->accessDescCount > 0 && params->accessDescs == NULL) || params->accessDescCount > (size_t)mock_driver.count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!mock_ordinal_valid(props->location.id)) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_graph_node *node = calloc(1, sizeof *node);
    if (node == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult result = new_allocation(params->bytesize, props->location.id, &node->u.alloc.allocation);
    if (result != CUDA_SUCCESS) {
        free(node);
        return result;
    }
    node->type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    params->dptr = node->u.alloc.allocation->base;
    node->u.alloc.params = *params;
    node->u.alloc.params.accessDescs = NULL; /* not kept: the caller's array */
    node->u.alloc.params.accessDescCount = 0;
    *out = node;
    return CUDA_SUCCESS;
}

static CUresult make_alloc_node_from(const void *parameters, struct mock_graph_node **node) {
    return make_alloc_node((CUDA_MEM_ALLOC_NODE_PARAMS *)parameters, node); /* dptr is written back */
}

CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
    return add_made_node(phGraphNode, hGraph, dependencies, numDependencies, make_alloc_node_from, nodeParams);
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
    MOCK_REQUIRE_INIT();
    const struct mock_graph_node *node = node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    if (node == NULL || params_out == NULL) return CUDA_ERROR_INVALID_VALUE;
    *params_out = node->u.alloc.params;
    return CUDA_SUCCESS;
}

/* A free node names a graph allocation (of this graph or another). */
static CUresult make_free_node(CUdeviceptr pointer, struct mock_graph_node **out) {
    struct mock_graph_node *node = calloc(1, sizeof *node);
    if (node == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    struct mock_graph_allocation *allocation = allocation_at(pointer);
    if (allocation != NULL) allocation->references++;
    UNLOCK();
    if (allocation == NULL) {
        free(node);
        return CUDA_ERROR_INVALID_VALUE;
    }
    node->type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    node->u.release.allocation = allocation;
    *out = node;
    return CUDA_SUCCESS;
}

static CUresult make_free_node_from(const void *parameters, struct mock_graph_node **node) {
    return make_free_node(*(const CUdeviceptr *)parameters, node);
}

CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                               size_t numDependencies, CUdeviceptr dptr) {
    return add_made_node(phGraphNode, hGraph, dependencies, numDependencies, make_free_node_from, &dptr);
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out) {
    MOCK_REQUIRE_INIT();
    const struct mock_graph_node *node = node_of_type(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE);
    if (node == NULL || dptr_out == NULL) return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = node->u.release.allocation->base;
    return CUDA_SUCCESS;
}

static CUresult list_nodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes, bool roots_only) {
    MOCK_REQUIRE_INIT();
    if (numNodes == NULL) return CUDA_ERROR_INVALID_VALUE;
    LOCK();
    struct mock_graph *graph = graph_of(hGraph);
    size_t found = 0;
    for (size_t i = 0; graph != NULL && i < graph->count; i++) {
        if (roots_only && !graph->nodes[i]->root) continue;
        if (nodes != NULL && found < *numNodes) nodes[found] = (CUgraphNode)graph->nodes[i];
        found++;
    }
    if (graph != NULL && nodes != NULL) {
        for (size_t i = found; i < *numNodes; i++) nodes[i] = NULL;
        if (found > *numNodes) found = *numNodes;
    }
    UNLOCK();
    if (graph == NULL) return CUDA_ERROR_INVALID_VALUE;
    *numNodes = found;
    return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes) {
    return list_nodes(hGraph, nodes, numNodes, false);
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes) {
    return list_nodes(hGraph, rootNodes, numRootNodes, true);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
    MOCK_REQUIRE_INIT();
    const struct mock_graph_node *node = node_of(hNode);
    if (node == NULL || type == NULL) return CUDA_ERROR_INVALID_VALUE;
    *type = node->type;
    return CUDA_SUCCESS;
}

/* ---- executable graphs ------------------------------------------------------------------------ */

static void exec_destroy_locked(struct mock_graph_exec *exec) {
    UNLINK(execs, exec);
    for (size_t i = 0; i < exec->count; i++) {
        struct mock_graph_node *step = &exec->steps[i];
        if (step->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) step->u.alloc.allocation->exec = NULL;
        node_release(step);
    }
    if (exec->graph != NULL) exec->graph->memory_exec = NULL;
    free(exec->steps);
    exec->magic = MOCK_DEAD_MAGIC;
    free(exec); /* its memory stays in the graph pools until trimmed */
}

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, cuuint64_t flags) {
    MOCK_REQUIRE_INIT();
    if (phGraphExec == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) return CUDA_ERROR_NOT_SUPPORTED;
    if (flags & ~(cuuint64_t)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                              CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
        return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_graph_exec *exec = calloc(1, sizeof *exec);
    if (exec == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    LOCK();
    struct mock_graph *graph = graph_of(hGraph);
    if (graph == NULL || (graph->has_memory_nodes && graph->memory_exec != NULL)) {
        UNLOCK();
        free(exec);
        return CUDA_ERROR_INVALID_VALUE; /* a graph with memory nodes has one executable graph at a time */
    }
    exec->steps = graph->count > 0 ? calloc(graph->count, sizeof *exec->steps) : NULL;
    if (graph->count > 0 && exec->steps == NULL) {
        UNLOCK();
        free(exec);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    exec->magic = MOCK_GRAPH_EXEC_MAGIC;
    exec->context = context;
    exec->graph = graph;
    exec->auto_free = (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
    for (size_t i = 0; i < graph->count; i++) {
        struct mock_graph_node *step = &exec->steps[i];
        *step = *graph->nodes[i];
        switch (step->type) {
            case CU_GRAPH_NODE_TYPE_KERNEL:
                step->u.kernel.arguments = mock_kernel_arguments_clone(graph->nodes[i]->u.kernel.arguments);
                if (graph->nodes[i]->u.kernel.arguments != NULL && step->u.kernel.arguments == NULL) result = CUDA_ERROR_OUT_OF_MEMORY;
                break;
            case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
                step->u.alloc.allocation->references++;
                step->u.alloc.allocation->exec = exec;
                exec->footprint[step->u.alloc.allocation->ordinal] += step->u.alloc.allocation->size;
                break;
            case CU_GRAPH_NODE_TYPE_MEM_FREE: step->u.release.allocation->references++; break;
            default: break;
        }
        exec->count = i + 1;
        if (result != CUDA_SUCCESS) break;
    }
    if (result != CUDA_SUCCESS) {
        exec->graph = NULL;
        exec_destroy_locked(exec);
        UNLOCK();
        return result;
    }
    if (graph->has_memory_nodes) graph->memory_exec = exec;
    exec->next = execs;
    execs = exec;
    UNLOCK();
    *phGraphExec = (CUgraphExec)exec;
    return CUDA_SUCCESS;
}

static void no_error_details(CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize) {
    if (phErrorNode != NULL) *phErrorNode = NULL;
    if (logBuffer != NULL && bufferSize > 0) logBuffer[0] = '\0';
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                            size_t bufferSize) {
    no_error_details(phErrorNode, logBuffer, bufferSize);
    return instantiate(phGraphExec, hGraph, 0);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode, char *logBuffer,
                               size_t bufferSize) {
    no_error_details(phErrorNode, logBuffer, bufferSize);
    return instantiate(phGraphExec, hGraph, 0);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) return CUDA_ERROR_INVALID_VALUE; /* cuGraphInstantiateWithParams only */
    return instantiate(phGraphExec, hGraph, flags);
}

static CUresult upload(CUgraphExec hGraphExec, CUstream hStream, bool per_thread);

static CUresult instantiate_with_params(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                        bool per_thread) {
    if (params == NULL) return CUDA_ERROR_INVALID_VALUE;
    params->hErrNode_out = NULL;
    CUresult result = instantiate(phGraphExec, hGraph, params->flags);
    if (result == CUDA_SUCCESS && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
        result = upload(*phGraphExec, params->hUploadStream, per_thread);
        if (result != CUDA_SUCCESS) cuGraphExecDestroy(*phGraphExec);
    }
    params->result_out = result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, false);
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(phGraphExec, hGraph, instantiateParams, true);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
    MOCK_REQUIRE_INIT();
    LOCK();
    struct mock_graph_exec *exec = exec_of(hGraphExec);
    if (exec != NULL) exec_destroy_locked(exec);
    UNLOCK();
    return exec != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult launch_target(CUgraphExec hGraphExec, CUstream hStream, bool per_thread, struct mock_graph_exec **exec,
                              struct mock_stream **stream) {
    MOCK_REQUIRE_INIT();
    CUresult result = mock_resolve_stream(hStream, per_thread, stream);
    if (result != CUDA_SUCCESS) return result;
    if ((*stream)->capture != NULL) return mock_capture_unsupported(*stream); /* no child graphs */
    if (mock_device_lost((*stream)->context->ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    *exec = exec_of(hGraphExec);
    return *exec != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult upload(CUgraphExec hGraphExec, CUstream hStream, bool per_thread) {
    struct mock_graph_exec *exec = NULL;
    struct mock_stream *stream = NULL;
    CUresult result = launch_target(hGraphExec, hStream, per_thread, &exec, &stream);
    if (result != CUDA_SUCCESS) return result;
    mock_release_due_frees();
    LOCK();
    result = exec_of(hGraphExec) != NULL ? map_exec(exec) : CUDA_ERROR_INVALID_VALUE;
    UNLOCK();
    return result;
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) { return upload(hGraphExec, hStream, false); }
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) { return upload(hGraphExec, hStream, true); }

/* Before anything runs: every allocation node finds its allocation freed (or frees it first, with
 * auto-free), every free node finds its allocation live. Caller holds graph_lock. */
static CUresult check_lifetimes(const struct mock_graph_exec *exec) {
    for (size_t i = 0; i < exec->count; i++) {
        const struct mock_graph_node *step = &exec->steps[i];
        if (step->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && step->u.alloc.allocation->live && !exec->auto_free)
            return CUDA_ERROR_INVALID_VALUE;
        if (step->type != CU_GRAPH_NODE_TYPE_MEM_FREE) continue;
        const struct mock_graph_allocation *allocation = step->u.release.allocation;
        bool allocated_before = false;
        for (size_t j = 0; j < i && !allocated_before; j++)
            allocated_before = exec->steps[j].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && exec->steps[j].u.alloc.allocation == allocation;
        if (!allocated_before && !allocation->live) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult make_live(struct mock_graph_allocation *allocation, struct mock_context *context) {
    struct mock_allocation *entry = calloc(1, sizeof *entry);
    if (entry == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *entry = (struct mock_allocation){.base = allocation->base, .size = allocation->size, .kind = MOCK_ALLOC_GRAPH,
                                      .ordinal = allocation->ordinal, .context = context, .buffer_id = mock_next_id(),
                                      .graph_allocation = allocation};
    pthread_mutex_lock(&mock_driver.memory_lock);
    bool stored = vgpu_ptrmap_put(&mock_driver.allocations, entry->base, entry);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (!stored) {
        free(entry);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    LOCK();
    allocation->live = true;
    allocation->references++;
    UNLOCK();
    return CUDA_SUCCESS;
}

static CUresult run_step(const struct mock_graph_node *step, struct mock_graph_exec *exec, struct mock_stream *stream) {
    switch (step->type) {
        case CU_GRAPH_NODE_TYPE_KERNEL: {
            void **parameters = step->u.kernel.arguments != NULL ? step->u.kernel.arguments->pointers : NULL;
            return mock_launch_run(step->u.kernel.function, &step->u.kernel.geometry, parameters, NULL, stream);
        }
        case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
            struct mock_graph_allocation *allocation = step->u.alloc.allocation;
            if (allocation->live) mock_free_allocation(allocation->base); /* auto-free on launch */
            return make_live(allocation, exec->context);
        }
        case CU_GRAPH_NODE_TYPE_MEM_FREE:
            return mock_free_allocation(step->u.release.allocation->base);
        case CU_GRAPH_NODE_TYPE_MEMCPY:
            return mock_copy_now(step->u.copy.destination, step->u.copy.source, step->u.copy.bytes,
                                 step->u.copy.destination_is_device, step->u.copy.source_is_device);
        case CU_GRAPH_NODE_TYPE_MEMSET:
            return mock_fill_now(step->u.fill.destination, step->u.fill.pitch, step->u.fill.value, step->u.fill.element_bytes,
                                 step->u.fill.width, step->u.fill.height);
        default: return CUDA_SUCCESS;
    }
}

static CUresult launch(CUgraphExec hGraphExec, CUstream hStream, bool per_thread) {
    struct mock_graph_exec *exec = NULL;
    struct mock_stream *stream = NULL;
    CUresult result = launch_target(hGraphExec, hStream, per_thread, &exec, &stream);
    if (result != CUDA_SUCCESS) return result;
    mock_release_due_frees();
    LOCK();
    result = exec_of(hGraphExec) == NULL ? CUDA_ERROR_INVALID_VALUE : check_lifetimes(exec);
    if (result == CUDA_SUCCESS) result = map_exec(exec);
    UNLOCK();
    for (size_t i = 0; i < exec->count && result == CUDA_SUCCESS; i++) result = run_step(&exec->steps[i], exec, stream);
    uint64_t end = atomic_load(&stream->last_end_ns);
    LOCK();
    if (end > exec->last_end_ns) exec->last_end_ns = end;
    UNLOCK();
    return result;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) { return launch(hGraphExec, hStream, false); }
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) { return launch(hGraphExec, hStream, true); }

void mock_graphs_release_context(struct mock_context *context) {
    LOCK();
    for (struct mock_graph_exec *exec = execs, *next; exec != NULL; exec = next) {
        next = exec->next;
        if (exec->context == context) exec_destroy_locked(exec);
    }
    for (struct mock_graph *graph = graphs, *next; graph != NULL; graph = next) {
        next = graph->next;
        if (graph->context == context) graph_destroy_locked(graph);
    }
    trim_pool(context->ordinal);
    UNLOCK();
}

/* ---- stream capture ---------------------------------------------------------------------------- */

static CUresult begin_capture(CUstream hStream, CUstreamCaptureMode mode, bool per_thread) {
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (!stream->per_thread && stream == &stream->context->legacy_stream) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (stream->capture != NULL) return CUDA_ERROR_ILLEGAL_STATE;
    struct mock_capture *capture = calloc(1, sizeof *capture);
    if (capture == NULL || (capture->graph = graph_new(stream->context)) == NULL) {
        free(capture);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stream->capture = capture;
    return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream hStream) { return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false); }
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) { return begin_capture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true); }
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) { return begin_capture(hStream, mode, false); }
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
    return begin_capture(hStream, mode, true);
}

static CUresult end_capture(CUstream hStream, CUgraph *phGraph, bool per_thread) {
    if (phGraph == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    struct mock_capture *capture = stream->capture;
    if (capture == NULL) return CUDA_ERROR_ILLEGAL_STATE;
    stream->capture = NULL;
    *phGraph = NULL;
    if (capture->invalidated) {
        LOCK();
        graph_destroy_locked(capture->graph);
        UNLOCK();
        result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
        *phGraph = (CUgraph)capture->graph;
    }
    free(capture);
    return result;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) { return end_capture(hStream, phGraph, false); }
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph) { return end_capture(hStream, phGraph, true); }

static CUresult is_capturing(CUstream hStream, CUstreamCaptureStatus *status, bool per_thread) {
    if (status == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    const struct mock_capture *capture = stream->capture;
    *status = capture == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
              : capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    return is_capturing(hStream, captureStatus, false);
}
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    return is_capturing(hStream, captureStatus, true);
}

void mock_capture_abandon(struct mock_stream *stream) {
    struct mock_capture *capture = stream->capture;
    if (capture == NULL) return;
    stream->capture = NULL;
    LOCK();
    graph_destroy_locked(capture->graph);
    UNLOCK();
    free(capture);
}

CUresult mock_capture_unsupported(struct mock_stream *stream) {
    stream->capture->invalidated = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* Chains a prepared node after the capture's last one. */
static CUresult record(struct mock_stream *stream, struct mock_graph_node *node) {
    struct mock_capture *capture = stream->capture;
    if (capture->invalidated) {
        LOCK();
        node_release(node);
        UNLOCK();
        free(node);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    CUgraphNode dependency = (CUgraphNode)capture->last;
    CUgraphNode added = NULL;
    CUresult result = insert(&added, capture->graph, capture->last != NULL ? &dependency : NULL, capture->last != NULL, node);
    if (result == CUDA_SUCCESS) capture->last = (struct mock_graph_node *)added;
    return result;
}

CUresult mock_capture_kernel(struct mock_stream *stream, const struct mock_function *function,
                             const struct mock_kernel_geometry *geometry, unsigned shared_bytes, void **kernelParams,
                             void **extra) {
    CUDA_KERNEL_NODE_PARAMS_v2 params = {(CUfunction)function, geometry->grid[0], geometry->grid[1], geometry->grid[2],
                                         geometry->block[0], geometry->block[1], geometry->block[2], shared_bytes,
                                         kernelParams, extra, NULL, NULL};
    struct mock_graph_node *node = NULL;
    CUresult result = make_kernel_node(&params, &node);
    return result == CUDA_SUCCESS ? record(stream, node) : result;
}

CUresult mock_capture_alloc(struct mock_stream *stream, CUdeviceptr *pointer, size_t bytes, int ordinal) {
    CUDA_MEM_ALLOC_NODE_PARAMS params = {.bytesize = bytes};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = ordinal;
    struct mock_graph_node *node = NULL;
    CUresult result = make_alloc_node(&params, &node);
    if (result == CUDA_SUCCESS) result = record(stream, node);
    if (result == CUDA_SUCCESS) *pointer = params.dptr;
    return result;
}

CUresult mock_capture_free(struct mock_stream *stream, CUdeviceptr pointer) {
    struct mock_graph_node *node = NULL;
    CUresult result = make_free_node(pointer, &node); /* a captured free must name a graph allocation */
    return result == CUDA_SUCCESS ? record(stream, node) : result;
}

/* Records a node that owns nothing: a copy of prototype. */
static CUresult record_plain(struct mock_stream *stream, struct mock_graph_node prototype) {
    struct mock_graph_node *node = malloc(sizeof *node);
    if (node == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *node = prototype;
    return record(stream, node);
}

CUresult mock_capture_copy(struct mock_stream *stream, void *destination, const void *source, size_t bytes,
                           bool destination_is_device, bool source_is_device) {
    if (bytes > 0 && (destination == NULL || source == NULL)) return CUDA_ERROR_INVALID_VALUE;
    return record_plain(stream, (struct mock_graph_node){
                                    .type = CU_GRAPH_NODE_TYPE_MEMCPY,
                                    .u.copy = {destination, source, bytes, destination_is_device, source_is_device}});
}

CUresult mock_capture_fill(struct mock_stream *stream, CUdeviceptr destination, size_t pitch, unsigned value,
                           size_t element_bytes, size_t width, size_t height) {
    if (pitch < width * element_bytes || destination % element_bytes != 0) return CUDA_ERROR_INVALID_VALUE;
    return record_plain(stream, (struct mock_graph_node){
                                    .type = CU_GRAPH_NODE_TYPE_MEMSET,
                                    .u.fill = {destination, pitch, element_bytes, width, height, value}});
}
