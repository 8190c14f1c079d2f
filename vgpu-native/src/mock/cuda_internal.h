/*
 * Internals of the mock libcuda.so.1. Device memory is host address space reserved per allocation
 * (MAP_NORESERVE: pages exist only once a copy touches them) and counted against the device's budget
 * in the shared mock state; kernels occupy their device on the shared virtual clock, and the reference
 * kernels (reference_kernels.h) also do their work on that host memory.
 */
#ifndef VGPU_MOCK_CUDA_INTERNAL_H
#define VGPU_MOCK_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/ptrmap.h"
#include "cuda_api.h" /* generated prototypes */
#include "mock/config.h"
#include "mock/state.h"

#define MOCK_CONTEXT_MAGIC 0x43545831u
#define MOCK_STREAM_MAGIC 0x53545231u
#define MOCK_EVENT_MAGIC 0x45564e31u
#define MOCK_MODULE_MAGIC 0x4d4f4431u
#define MOCK_FUNCTION_MAGIC 0x46554e31u
#define MOCK_LIBRARY_MAGIC 0x4c494231u
#define MOCK_ARRAY_MAGIC 0x41525231u
#define MOCK_MIPMAP_MAGIC 0x4d49505du
#define MOCK_POOL_MAGIC 0x504f4f31u
#define MOCK_VMM_MAGIC 0x564d4d31u
#define MOCK_GRAPH_MAGIC 0x47525031u
#define MOCK_GRAPH_NODE_MAGIC 0x474e4f31u
#define MOCK_GRAPH_EXEC_MAGIC 0x47455831u
#define MOCK_DEAD_MAGIC 0xdeadbeefu

#define MOCK_VMM_GRANULARITY (2ULL << 20)
#define MOCK_CONTEXT_STACK_DEPTH 32

struct mock_context;
struct mock_capture;

struct mock_stream {
    uint32_t magic;
    struct mock_context *context;
    unsigned flags;
    int priority;
    bool per_thread;
    uint64_t id;
    _Atomic uint64_t last_end_ns; /* virtual time at which the work queued so far completes */
    struct mock_capture *capture; /* non-NULL while the stream is being captured into a graph */
    struct mock_stream *next;     /* in context->streams */
};

struct mock_event {
    uint32_t magic;
    unsigned flags;
    bool recorded;
    uint64_t time_ns; /* CLOCK_MONOTONIC time the event completes */
    struct mock_event *next;
    struct mock_context *context;
};

struct mock_context {
    uint32_t magic;
    int ordinal;                     /* CUDA ordinal, after visibility filters */
    unsigned physical;               /* physical device index */
    unsigned flags;
    bool primary;
    bool active;                     /* primary contexts are inactive until retained */
    int primary_retains;
    uint64_t id;
    _Atomic uint64_t last_end_ns;    /* latest completion among all streams of this context */
    uint64_t charged_bytes;          /* context memory booked on the device */
    size_t limits[CU_LIMIT_MAX];
    CUfunc_cache cache_config;
    struct mock_stream legacy_stream;
    pthread_mutex_t lock;            /* guards the lists below */
    struct mock_stream *streams;
    struct mock_event *events;
    struct mock_module *modules;
};

struct mock_reference_kernel;

struct mock_function {
    uint32_t magic;
    struct mock_module *module;
    char name[256];
    const struct mock_reference_kernel *reference; /* NULL: a kernel that runs no code */
    uint64_t mean_ns;                /* device time of a launch before variation (the kernel table) */
    int max_dynamic_shared;
    int carveout;
    CUfunc_cache cache_config;
    struct mock_function *next;
};

struct mock_module {
    uint32_t magic;
    struct mock_context *context;    /* NULL for a library's module */
    char **entries;                  /* kernel names found in PTX text; NULL = any name accepted */
    unsigned entry_count;
    pthread_mutex_t lock;
    struct mock_function *functions;
    struct mock_module *next;
};

struct mock_library {
    uint32_t magic;
    struct mock_module module;
};

enum mock_allocation_kind {
    MOCK_ALLOC_DEVICE,
    MOCK_ALLOC_MANAGED,
    MOCK_ALLOC_POOL,
    MOCK_ALLOC_HOST,
    MOCK_ALLOC_HOST_REGISTERED,
    MOCK_ALLOC_VMM_RANGE,
    MOCK_ALLOC_GRAPH,                /* a graph allocation while it is live; its memory is the graph pool's */
};

struct mock_pool {
    uint32_t magic;
    int ordinal;
    CUmemPoolProps props;
    uint64_t release_threshold;
    int reuse_flags[3];
    _Atomic uint64_t used_current;
    _Atomic uint64_t used_high;
};

struct mock_allocation {
    CUdeviceptr base;
    size_t size;
    size_t mapped_size;              /* bytes of address space mapped, 0 if the caller owns the memory */
    enum mock_allocation_kind kind;
    int ordinal;                     /* -1 for host memory */
    struct mock_context *context;
    struct mock_pool *pool;
    unsigned host_flags;
    uint64_t buffer_id;
    struct mock_graph_allocation *graph_allocation; /* MOCK_ALLOC_GRAPH */
};

/* A block of device memory whose stream-ordered free is enqueued: it returns to the device when its
 * stream reaches the free (at_ns in virtual time), noticed at the next memory, synchronisation or query
 * call of this process. */
struct mock_pending_free {
    struct mock_allocation *allocation;
    uint64_t at_ns;
    struct mock_pending_free *next;
};

/* Memory the graphs of one device hold (cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute). */
struct mock_graph_pool {
    uint64_t reserved;               /* taken from the device for graphs */
    uint64_t reserved_high;
    uint64_t used_high;
};

struct mock_array {
    uint32_t magic;
    CUDA_ARRAY3D_DESCRIPTOR descriptor;
    size_t element_bytes;
    size_t bytes;
    char *data;
    int ordinal;
    struct mock_context *context;
    bool owns_data;                  /* false for a level of a mipmapped array */
    uint64_t charged_bytes;
};

struct mock_mipmap {
    uint32_t magic;
    unsigned levels;
    struct mock_array *level_arrays;
    char *data;
    size_t bytes;
    int ordinal;
    struct mock_context *context;
};

/* Physical memory of the virtual memory management API: a sparse memfd that cuMemMap maps. */
struct mock_vmm_allocation {
    uint32_t magic;
    int fd;
    size_t size;
    int ordinal;
    bool charged;
    CUmemAllocationProp prop;
    _Atomic int references;          /* the handle itself + each mapping */
};

struct mock_driver {
    _Atomic int initialized;
    const struct mock_config *config;
    struct mock_state *state;
    struct mock_state_process *process;
    int count;                                           /* CUDA-visible devices */
    const struct mock_device *devices[MOCK_MAX_DEVICES]; /* by CUDA ordinal */
    struct mock_context primary[MOCK_MAX_DEVICES];
    struct mock_pool default_pool[MOCK_MAX_DEVICES];
    struct mock_pool *current_pool[MOCK_MAX_DEVICES];
    pthread_mutex_t memory_lock;                         /* guards allocations and mappings */
    struct vgpu_ptrmap allocations;                      /* base address -> struct mock_allocation */
    struct vgpu_ptrmap vmm_mappings;                     /* mapped address -> struct mock_vmm_mapping */
    struct mock_pending_free *pending_frees;             /* under memory_lock */
    _Atomic int pending_free_count;
    pthread_mutex_t graph_lock;                          /* guards graphs, executable graphs and graph pools */
    struct mock_graph_pool graph_pools[MOCK_MAX_DEVICES];
    _Atomic uint64_t next_id;
};

extern struct mock_driver mock_driver;

#define MOCK_REQUIRE_INIT()                                                                        \
    do {                                                                                           \
        if (!atomic_load_explicit(&mock_driver.initialized, memory_order_acquire))                 \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

static inline bool mock_ordinal_valid(CUdevice ordinal) { return ordinal >= 0 && ordinal < mock_driver.count; }
static inline unsigned mock_physical(int ordinal) { return mock_driver.devices[ordinal]->physical_index; }
static inline bool mock_device_lost(int ordinal) {
    return atomic_load_explicit(&mock_driver.state->devices[mock_physical(ordinal)].lost, memory_order_relaxed) != 0;
}
static inline uint64_t mock_capacity_bytes(int ordinal) { return mock_driver.devices[ordinal]->profile->memory_mib << 20; }
static inline uint64_t mock_next_id(void) { return atomic_fetch_add(&mock_driver.next_id, 1) + 1; }

/* Contexts and streams (cuda_context.c). */
struct mock_context *mock_current_context(void);
CUresult mock_require_context(struct mock_context **context);
CUresult mock_resolve_stream(CUstream handle, bool per_thread_default, struct mock_stream **stream);
void mock_context_init_primary(int ordinal);
void mock_wait_until(uint64_t time_ns);
void mock_stream_mark(struct mock_stream *stream, uint64_t end_ns);
/* Releases every resource owned by a context (memory, streams, events, modules). */
void mock_context_release_resources(struct mock_context *context);

/* Memory (cuda_memory.c). */
/* Books bytes on a device for this process (returning dead processes' memory first when full). */
bool mock_charge_device(int ordinal, uint64_t bytes);
void mock_uncharge_device(int ordinal, uint64_t bytes);
/* Returns the blocks whose stream-ordered frees have happened; cheap when none is pending. */
void mock_release_due_frees(void);
CUresult mock_allocate_device(CUdeviceptr *pointer, size_t bytes, int ordinal, enum mock_allocation_kind kind,
                              struct mock_context *context, struct mock_pool *pool);
CUresult mock_free_allocation(CUdeviceptr pointer);
void mock_free_context_allocations(struct mock_context *context);
/* The allocation containing address, or NULL. Caller holds memory_lock. */
struct mock_allocation *mock_find_allocation(CUdeviceptr address);
/* True if [address, address + bytes) lies in one allocation the driver knows (always for 0 bytes). */
bool mock_device_range_valid(CUdeviceptr address, size_t bytes);
struct mock_array *mock_array_from_handle(CUarray handle);

/* Copies and memsets done now, on validated ranges (cuda_copy.c): what a graph's copy and memset nodes do. */
CUresult mock_copy_now(void *destination, const void *source, size_t bytes, bool destination_is_device,
                       bool source_is_device);
CUresult mock_fill_now(CUdeviceptr destination, size_t pitch, unsigned value, size_t element_bytes, size_t width,
                       size_t height);

/* Modules (cuda_module.c). */
void mock_module_destroy(struct mock_module *module);
/* The function behind a CUfunction or CUkernel handle, or NULL. */
struct mock_function *mock_function_of(const void *handle);

/* What a launch does (kernels.c). */
struct mock_kernel_geometry {
    unsigned grid[3], block[3];
};
/* Checks a launch of function with this geometry on the device of ordinal (cuda_module.c). */
CUresult mock_launch_check(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                           unsigned shared_bytes, bool cooperative, int ordinal);
/* Runs a checked launch and books it on the stream's device clock (cuda_module.c). */
CUresult mock_launch_run(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                         void **kernelParams, void **extra, struct mock_stream *stream);
/* A launch's parameter values copied, as a graph node keeps them: `pointers` is the kernelParams array
 * to launch with. NULL with *result CUDA_SUCCESS for a kernel the mock runs no code for. */
struct mock_kernel_arguments {
    size_t bytes;                    /* of the whole block */
    unsigned count;
    void *pointers[4];
    unsigned char values[];
};
struct mock_kernel_arguments *mock_kernel_arguments_copy(const struct mock_function *function, void **kernelParams,
                                                         void **extra, CUresult *result);
struct mock_kernel_arguments *mock_kernel_arguments_clone(const struct mock_kernel_arguments *arguments);
/* The reference kernel of that name, or NULL. */
const struct mock_reference_kernel *mock_reference_kernel_named(const char *name);
/* Runs one launch of function: decodes its parameters (kernelParams, or the extra buffer), does a
 * reference kernel's work, and sets the device time the launch takes. Nothing happens on an error. */
CUresult mock_kernel_run(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                         void **kernelParams, void **extra, uint64_t *duration_ns);

/* Graphs and stream capture (cuda_graph.c). A capturing stream records what is enqueued on it as
 * nodes of its capture's graph, chained in stream order, instead of running it. */
CUresult mock_capture_kernel(struct mock_stream *stream, const struct mock_function *function,
                             const struct mock_kernel_geometry *geometry, unsigned shared_bytes, void **kernelParams,
                             void **extra);
CUresult mock_capture_alloc(struct mock_stream *stream, CUdeviceptr *pointer, size_t bytes, int ordinal);
CUresult mock_capture_free(struct mock_stream *stream, CUdeviceptr pointer);
CUresult mock_capture_copy(struct mock_stream *stream, void *destination, const void *source, size_t bytes,
                           bool destination_is_device, bool source_is_device);
CUresult mock_capture_fill(struct mock_stream *stream, CUdeviceptr destination, size_t pitch, unsigned value,
                           size_t element_bytes, size_t width, size_t height);
/* Ends a stream's capture, if any, destroying the graph it was building (the stream or its context is
 * destroyed). Caller holds the stream's context lock or owns the stream. */
void mock_capture_abandon(struct mock_stream *stream);
/* What the mock cannot record into a graph, or must not do while capturing (synchronising the stream):
 * invalidates the capture and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult mock_capture_unsupported(struct mock_stream *stream);
/* A live graph allocation freed outside its graph (cuMemFree, cuMemFreeAsync). */
void mock_graph_allocation_freed(struct mock_graph_allocation *allocation);
/* Destroys the executable graphs and graphs made in a context, and trims the graph pools. */
void mock_graphs_release_context(struct mock_context *context);

#endif
