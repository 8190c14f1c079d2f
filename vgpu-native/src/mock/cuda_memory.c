/* Mock driver: device, managed, pitched, host and stream-ordered memory, memory pools, the virtual
 * memory management API, arrays, and pointer queries.
 *
 * Device memory is reserved host address space (MAP_NORESERVE), so a 141 GiB device fits on a small
 * machine: a page costs RAM only once a copy or memset touches it. The budget is the device's
 * profile memory, shared by all processes through the mock state. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/arrays.h"
#include "common/log.h"
#include "mock/cuda_internal.h"

static size_t page_size(void) {
    static size_t cached;
    if (cached == 0) cached = (size_t)sysconf(_SC_PAGESIZE);
    return cached;
}

static size_t round_up(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

static void *reserve_address_space(size_t bytes) {
    void *memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return memory == MAP_FAILED ? NULL : memory;
}

/* Books bytes on the device; when full, returns memory of dead processes first, as the real driver
 * frees a process's memory when it exits. */
bool mock_charge_device(int ordinal, uint64_t bytes) {
    unsigned physical = mock_physical(ordinal);
    uint64_t capacity = mock_capacity_bytes(ordinal);
    if (mock_state_charge(mock_driver.state, mock_driver.process, physical, bytes, capacity)) return true;
    return mock_state_reap(mock_driver.state) > 0 &&
           mock_state_charge(mock_driver.state, mock_driver.process, physical, bytes, capacity);
}

void mock_uncharge_device(int ordinal, uint64_t bytes) {
    mock_state_uncharge(mock_driver.state, mock_driver.process, mock_physical(ordinal), bytes);
}

static CUresult record_allocation(struct mock_allocation *allocation) {
    pthread_mutex_lock(&mock_driver.memory_lock);
    bool stored = vgpu_ptrmap_put(&mock_driver.allocations, allocation->base, allocation);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return stored ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult mock_allocate_device(CUdeviceptr *pointer, size_t bytes, int ordinal, enum mock_allocation_kind kind,
                              struct mock_context *context, struct mock_pool *pool) {
    if (pointer == NULL || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (mock_device_lost(ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    mock_release_due_frees();
    if (!mock_charge_device(ordinal, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    struct mock_allocation *allocation = calloc(1, sizeof *allocation);
    size_t mapped = round_up(bytes, page_size());
    void *memory = allocation != NULL ? reserve_address_space(mapped) : NULL;
    if (memory == NULL) {
        free(allocation);
        mock_uncharge_device(ordinal, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *allocation = (struct mock_allocation){.base = (CUdeviceptr)(uintptr_t)memory, .size = bytes, .mapped_size = mapped,
                                           .kind = kind, .ordinal = ordinal, .context = context, .pool = pool,
                                           .buffer_id = mock_next_id()};
    if (record_allocation(allocation) != CUDA_SUCCESS) {
        munmap(memory, mapped);
        free(allocation);
        mock_uncharge_device(ordinal, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (pool != NULL) {
        uint64_t used = atomic_fetch_add(&pool->used_current, bytes) + bytes;
        uint64_t high = atomic_load(&pool->used_high);
        while (high < used && !atomic_compare_exchange_weak(&pool->used_high, &high, used)) {
        }
    }
    *pointer = allocation->base;
    return CUDA_SUCCESS;
}

static void release_allocation(struct mock_allocation *allocation) {
    if (allocation->kind == MOCK_ALLOC_GRAPH) { /* its address and memory belong to its graph */
        mock_graph_allocation_freed(allocation->graph_allocation);
        free(allocation);
        return;
    }
    if (allocation->mapped_size > 0) munmap((void *)(uintptr_t)allocation->base, allocation->mapped_size);
    if (allocation->ordinal >= 0) mock_uncharge_device(allocation->ordinal, allocation->size);
    if (allocation->pool != NULL) atomic_fetch_sub(&allocation->pool->used_current, allocation->size);
    free(allocation);
}

#define KIND(kind) (1U << (kind))
#define DEVICE_KINDS (KIND(MOCK_ALLOC_DEVICE) | KIND(MOCK_ALLOC_MANAGED) | KIND(MOCK_ALLOC_POOL) | KIND(MOCK_ALLOC_GRAPH))

/* Removes and returns the allocation starting at base if its kind is in kinds (a KIND() mask). */
static struct mock_allocation *take_allocation(CUdeviceptr base, unsigned kinds) {
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *allocation = vgpu_ptrmap_get(&mock_driver.allocations, base);
    if (allocation != NULL && (kinds & KIND(allocation->kind)) != 0) vgpu_ptrmap_remove(&mock_driver.allocations, base);
    else allocation = NULL;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return allocation;
}

CUresult mock_free_allocation(CUdeviceptr pointer) {
    struct mock_allocation *allocation = take_allocation(pointer, DEVICE_KINDS);
    if (allocation == NULL) return CUDA_ERROR_INVALID_VALUE;
    release_allocation(allocation);
    return CUDA_SUCCESS;
}

/* ---- stream-ordered frees -------------------------------------------------------------------- */

/* The block leaves the driver's allocations at once (the program may not use it for new work), and
 * returns to the device when its stream reaches the free. */
static CUresult free_in_stream_order(CUdeviceptr pointer, uint64_t at_ns) {
    struct mock_pending_free *pending = malloc(sizeof *pending);
    if (pending == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    struct mock_allocation *allocation = take_allocation(pointer, DEVICE_KINDS);
    if (allocation == NULL) {
        free(pending);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (at_ns <= vgpu_now_ns()) {
        free(pending);
        release_allocation(allocation);
        return CUDA_SUCCESS;
    }
    *pending = (struct mock_pending_free){allocation, at_ns, NULL};
    pthread_mutex_lock(&mock_driver.memory_lock);
    pending->next = mock_driver.pending_frees;
    mock_driver.pending_frees = pending;
    atomic_fetch_add(&mock_driver.pending_free_count, 1);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return CUDA_SUCCESS;
}

void mock_release_due_frees(void) {
    if (atomic_load_explicit(&mock_driver.pending_free_count, memory_order_acquire) == 0) return;
    uint64_t now = vgpu_now_ns();
    struct mock_pending_free *due = NULL;
    pthread_mutex_lock(&mock_driver.memory_lock);
    for (struct mock_pending_free **link = &mock_driver.pending_frees; *link != NULL;) {
        struct mock_pending_free *pending = *link;
        if (pending->at_ns > now) {
            link = &pending->next;
            continue;
        }
        *link = pending->next;
        pending->next = due;
        due = pending;
        atomic_fetch_sub(&mock_driver.pending_free_count, 1);
    }
    pthread_mutex_unlock(&mock_driver.memory_lock);
    while (due != NULL) {
        struct mock_pending_free *next = due->next;
        release_allocation(due->allocation);
        free(due);
        due = next;
    }
}

struct context_sweep {
    struct mock_context *context;
    struct mock_allocation **found;
    size_t count, capacity;
};

static void collect_context_allocation(uint64_t key, void *value, void *sweep_pointer) {
    (void)key;
    struct context_sweep *sweep = sweep_pointer;
    struct mock_allocation *allocation = value;
    if (allocation->context != sweep->context || allocation->kind == MOCK_ALLOC_HOST_REGISTERED) return;
    if (sweep->count == sweep->capacity) {
        size_t capacity = sweep->capacity ? sweep->capacity * 2 : 16;
        struct mock_allocation **grown = realloc(sweep->found, capacity * sizeof *grown);
        if (grown == NULL) return; /* leaves this one allocated rather than failing the teardown */
        sweep->found = grown;
        sweep->capacity = capacity;
    }
    sweep->found[sweep->count++] = allocation;
}

void mock_free_context_allocations(struct mock_context *context) {
    struct context_sweep sweep = {.context = context};
    pthread_mutex_lock(&mock_driver.memory_lock);
    vgpu_ptrmap_each(&mock_driver.allocations, collect_context_allocation, &sweep);
    for (size_t i = 0; i < sweep.count; i++) vgpu_ptrmap_remove(&mock_driver.allocations, sweep.found[i]->base);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    for (size_t i = 0; i < sweep.count; i++) release_allocation(sweep.found[i]);
    free(sweep.found);
}

struct range_search {
    CUdeviceptr address;
    struct mock_allocation *found;
};

static void match_range(uint64_t key, void *value, void *search_pointer) {
    (void)key;
    struct range_search *search = search_pointer;
    struct mock_allocation *allocation = value;
    if (search->address >= allocation->base && search->address - allocation->base < allocation->size)
        search->found = allocation;
}

struct mock_allocation *mock_find_allocation(CUdeviceptr address) {
    struct mock_allocation *exact = vgpu_ptrmap_get(&mock_driver.allocations, address);
    if (exact != NULL) return exact;
    struct range_search search = {.address = address};
    vgpu_ptrmap_each(&mock_driver.allocations, match_range, &search);
    return search.found;
}

bool mock_device_range_valid(CUdeviceptr address, size_t bytes) {
    if (bytes == 0) return true;
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *allocation = mock_find_allocation(address);
    bool inside = allocation != NULL && address - allocation->base <= allocation->size &&
                  bytes <= allocation->size - (address - allocation->base);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return inside;
}

/* ---- device memory ------------------------------------------------------------------------- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    return mock_allocate_device(dptr, bytesize, context->ordinal, MOCK_ALLOC_DEVICE, context, NULL);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    size_t pitch = round_up(WidthInBytes, 512); /* CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT */
    if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    result = mock_allocate_device(dptr, pitch * Height, context->ordinal, MOCK_ALLOC_DEVICE, context, NULL);
    if (result == CUDA_SUCCESS) *pPitch = pitch;
    return result;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    if (dptr == NULL || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    return mock_allocate_device(dptr, bytesize, context->ordinal, MOCK_ALLOC_MANAGED, context, NULL);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
    MOCK_REQUIRE_INIT();
    if (dptr == 0) return CUDA_SUCCESS;
    return mock_free_allocation(dptr);
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
    /* Either output may be omitted (OptiX asks for total alone); both omitted is an error. */
    if (free == NULL && total == NULL) return CUDA_ERROR_INVALID_VALUE;
    mock_release_due_frees();
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    uint64_t capacity = mock_capacity_bytes(context->ordinal);
    uint64_t used = atomic_load(&mock_driver.state->devices[context->physical].used_bytes);
    if (free != NULL) *free = (size_t)(used < capacity ? capacity - used : 0);
    if (total != NULL) *total = (size_t)capacity;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
    MOCK_REQUIRE_INIT();
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *allocation = mock_find_allocation(dptr);
    CUdeviceptr base = allocation != NULL ? allocation->base : 0;
    size_t size = allocation != NULL ? allocation->size : 0;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (allocation == NULL) return CUDA_ERROR_NOT_FOUND;
    if (pbase != NULL) *pbase = base;
    if (psize != NULL) *psize = size;
    return CUDA_SUCCESS;
}

/* ---- host memory --------------------------------------------------------------------------- */

static CUresult allocate_host(void **pp, size_t bytesize, unsigned flags) {
    if (pp == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_allocation *allocation = calloc(1, sizeof *allocation);
    size_t mapped = round_up(bytesize, page_size());
    void *memory = allocation != NULL ? reserve_address_space(mapped) : NULL;
    if (memory == NULL) {
        free(allocation);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *allocation = (struct mock_allocation){.base = (CUdeviceptr)(uintptr_t)memory, .size = bytesize, .mapped_size = mapped,
                                           .kind = MOCK_ALLOC_HOST, .ordinal = -1, .context = context,
                                           .host_flags = flags, .buffer_id = mock_next_id()};
    if (record_allocation(allocation) != CUDA_SUCCESS) {
        munmap(memory, mapped);
        free(allocation);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = memory;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { return allocate_host(pp, bytesize, 0); }
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) { return allocate_host(pp, bytesize, Flags); }

CUresult cuMemFreeHost(void *p) {
    MOCK_REQUIRE_INIT();
    struct mock_allocation *allocation = take_allocation((CUdeviceptr)(uintptr_t)p, KIND(MOCK_ALLOC_HOST));
    if (allocation == NULL) return CUDA_ERROR_INVALID_VALUE;
    release_allocation(allocation);
    return CUDA_SUCCESS;
}

static CUresult host_allocation_of(const void *p, unsigned *flags) {
    MOCK_REQUIRE_INIT();
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *allocation = mock_find_allocation((CUdeviceptr)(uintptr_t)p);
    bool host = allocation != NULL && (allocation->kind == MOCK_ALLOC_HOST || allocation->kind == MOCK_ALLOC_HOST_REGISTERED);
    if (host && flags != NULL) *flags = allocation->host_flags;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
    if (pdptr == NULL || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = host_allocation_of(p, NULL);
    if (result == CUDA_SUCCESS) *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: same address */
    return result;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) {
    if (pFlags == NULL) return CUDA_ERROR_INVALID_VALUE;
    return host_allocation_of(p, pFlags);
}

static CUresult register_host(void *p, size_t bytesize, unsigned flags) {
    if (p == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |
                             CU_MEMHOSTREGISTER_READ_ONLY)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    CUdeviceptr base = (CUdeviceptr)(uintptr_t)p;
    pthread_mutex_lock(&mock_driver.memory_lock);
    bool overlaps = mock_find_allocation(base) != NULL || mock_find_allocation(base + bytesize - 1) != NULL;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (overlaps) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    struct mock_allocation *allocation = calloc(1, sizeof *allocation);
    if (allocation == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *allocation = (struct mock_allocation){.base = base, .size = bytesize, .kind = MOCK_ALLOC_HOST_REGISTERED,
                                           .ordinal = -1, .context = context, .host_flags = flags,
                                           .buffer_id = mock_next_id()};
    result = record_allocation(allocation);
    if (result != CUDA_SUCCESS) free(allocation);
    return result;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags) { return register_host(p, bytesize, Flags); }
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) { return register_host(p, bytesize, Flags); }

CUresult cuMemHostUnregister(void *p) {
    MOCK_REQUIRE_INIT();
    struct mock_allocation *allocation = take_allocation((CUdeviceptr)(uintptr_t)p, KIND(MOCK_ALLOC_HOST_REGISTERED));
    if (allocation == NULL) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    free(allocation); /* the memory belongs to the caller */
    return CUDA_SUCCESS;
}

/* ---- pointer queries ----------------------------------------------------------------------- */

static CUresult pointer_attribute(void *data, CUpointer_attribute attribute, const struct mock_allocation *allocation,
                                  CUdeviceptr ptr) {
    bool device = allocation->kind == MOCK_ALLOC_DEVICE || allocation->kind == MOCK_ALLOC_MANAGED ||
                  allocation->kind == MOCK_ALLOC_POOL || allocation->kind == MOCK_ALLOC_VMM_RANGE ||
                  allocation->kind == MOCK_ALLOC_GRAPH;
    bool host_accessible = !device || allocation->kind == MOCK_ALLOC_MANAGED;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = (CUcontext)allocation->context; break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned int *)data = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            if (!host_accessible) return CUDA_ERROR_INVALID_VALUE;
            *(void **)data = (void *)(uintptr_t)ptr;
            break;
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(bool *)data = false; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = allocation->buffer_id; break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(bool *)data = allocation->kind == MOCK_ALLOC_MANAGED; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data = allocation->ordinal >= 0 ? allocation->ordinal
                                                    : (allocation->context != NULL ? allocation->context->ordinal : 0);
            break;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *(bool *)data = allocation->kind == MOCK_ALLOC_DEVICE; break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = allocation->base; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = allocation->size; break;
        case CU_POINTER_ATTRIBUTE_MAPPED: *(bool *)data = true; break;
        case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
            *(unsigned long long *)data =
                allocation->kind == MOCK_ALLOC_VMM_RANGE ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
            break;
        case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: *(bool *)data = false; break;
        case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *(unsigned long long *)data = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; break;
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = (CUmemoryPool)allocation->pool; break;
        case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *(size_t *)data = allocation->size; break;
        case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *(void **)data = (void *)(uintptr_t)allocation->base; break;
        case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *(unsigned long long *)data = allocation->buffer_id; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *found = mock_find_allocation(ptr);
    struct mock_allocation copy = found != NULL ? *found : (struct mock_allocation){0};
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (found == NULL) return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(data, attribute, &copy, ptr);
}

/* Size of each attribute's value, for zeroing the outputs of an unknown pointer. */
static size_t attribute_size(CUpointer_attribute attribute) {
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        case CU_POINTER_ATTRIBUTE_MAPPED:
        case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return sizeof(bool);
        default: return sizeof(unsigned long long);
    }
}

CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr) {
    if (numAttributes > 0 && (attributes == NULL || data == NULL)) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *found = mock_find_allocation(ptr);
    struct mock_allocation copy = found != NULL ? *found : (struct mock_allocation){0};
    pthread_mutex_unlock(&mock_driver.memory_lock);
    for (unsigned i = 0; i < numAttributes; i++) {
        if (data[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
        if (found == NULL) {
            /* Not a CUDA pointer: defaults, not an error (documented behaviour). */
            memset(data[i], 0, attribute_size(attributes[i]));
            if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *(int *)data[i] = -2;
            continue;
        }
        CUresult result = pointer_attribute(data[i], attributes[i], &copy, ptr);
        if (result != CUDA_SUCCESS) return result;
    }
    return CUDA_SUCCESS;
}

/* Advice and prefetch only move data between host and device; the mock's memory is host memory
 * either way, so they validate their arguments and otherwise have nothing to do. */
static CUresult check_managed_range(CUdeviceptr devPtr, size_t count) {
    MOCK_REQUIRE_INIT();
    if (count == 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *allocation = mock_find_allocation(devPtr);
    bool inside = allocation != NULL && devPtr - allocation->base + count <= allocation->size;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return inside ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static bool location_valid(CUmemLocation location) {
    if (location.type == CU_MEM_LOCATION_TYPE_DEVICE) return mock_ordinal_valid(location.id);
    return location.type == CU_MEM_LOCATION_TYPE_HOST || location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
    if ((int)advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_managed_range(devPtr, count);
    if (result == CUDA_SUCCESS && device != CU_DEVICE_CPU && !mock_ordinal_valid(device)) return CUDA_ERROR_INVALID_DEVICE;
    return result;
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location) {
    if ((int)advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_managed_range(devPtr, count);
    if (result == CUDA_SUCCESS && !location_valid(location)) return CUDA_ERROR_INVALID_VALUE;
    return result;
}

static CUresult prefetch(CUdeviceptr devPtr, size_t count, bool to_valid_place, CUstream hStream, bool per_thread) {
    CUresult result = check_managed_range(devPtr, count);
    if (result != CUDA_SUCCESS) return result;
    if (!to_valid_place) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_stream *stream = NULL;
    return mock_resolve_stream(hStream, per_thread, &stream);
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
    return prefetch(devPtr, count, dstDevice == CU_DEVICE_CPU || mock_ordinal_valid(dstDevice), hStream, false);
}
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) {
    return prefetch(devPtr, count, dstDevice == CU_DEVICE_CPU || mock_ordinal_valid(dstDevice), hStream, true);
}
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream) {
    return flags != 0 ? CUDA_ERROR_INVALID_VALUE : prefetch(devPtr, count, location_valid(location), hStream, false);
}
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                    CUstream hStream) {
    return flags != 0 ? CUDA_ERROR_INVALID_VALUE : prefetch(devPtr, count, location_valid(location), hStream, true);
}

/* ---- memory pools and stream-ordered allocation -------------------------------------------- */

static struct mock_pool *pool_of(CUmemoryPool handle) {
    struct mock_pool *pool = (struct mock_pool *)handle;
    return (pool != NULL && pool->magic == MOCK_POOL_MAGIC) ? pool : NULL;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev) {
    if (pool_out == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = (CUmemoryPool)&mock_driver.default_pool[dev];
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
    if (pool == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pool = (CUmemoryPool)mock_driver.current_pool[dev];
    return CUDA_SUCCESS;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_pool *target = pool_of(pool);
    if (target == NULL || target->ordinal != dev) return CUDA_ERROR_INVALID_VALUE;
    mock_driver.current_pool[dev] = target;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
    if (pool == NULL || poolProps == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!mock_ordinal_valid(poolProps->location.id)) return CUDA_ERROR_INVALID_DEVICE;
    struct mock_pool *created = calloc(1, sizeof *created);
    if (created == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    created->magic = MOCK_POOL_MAGIC;
    created->ordinal = poolProps->location.id;
    created->props = *poolProps;
    created->reuse_flags[0] = created->reuse_flags[1] = created->reuse_flags[2] = 1;
    *pool = (CUmemoryPool)created;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
    MOCK_REQUIRE_INIT();
    struct mock_pool *target = pool_of(pool);
    if (target == NULL || target == &mock_driver.default_pool[target->ordinal]) return CUDA_ERROR_INVALID_VALUE;
    if (atomic_load(&target->used_current) != 0) return CUDA_ERROR_INVALID_VALUE; /* memory still allocated from it */
    if (mock_driver.current_pool[target->ordinal] == target)
        mock_driver.current_pool[target->ordinal] = &mock_driver.default_pool[target->ordinal];
    target->magic = MOCK_DEAD_MAGIC;
    free(target);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
    (void)minBytesToKeep; /* the mock pool never caches freed memory, so there is nothing to trim */
    MOCK_REQUIRE_INIT();
    mock_release_due_frees();
    return pool_of(pool) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    MOCK_REQUIRE_INIT();
    struct mock_pool *target = pool_of(pool);
    if (target == NULL || value == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            target->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value;
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: target->release_threshold = *(cuuint64_t *)value; return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            if (*(cuuint64_t *)value != 0) return CUDA_ERROR_INVALID_VALUE; /* high-water marks reset to zero only */
            atomic_store(&target->used_high, atomic_load(&target->used_current));
            return CUDA_SUCCESS;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
    MOCK_REQUIRE_INIT();
    mock_release_due_frees();
    struct mock_pool *target = pool_of(pool);
    if (target == NULL || value == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            *(int *)value = target->reuse_flags[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
            return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = target->release_threshold; return CUDA_SUCCESS;
        /* Freed blocks go straight back to the device, so reserved memory equals memory in use. */
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = atomic_load(&target->used_current); return CUDA_SUCCESS;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = atomic_load(&target->used_high); return CUDA_SUCCESS;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
    MOCK_REQUIRE_INIT();
    if (pool_of(pool) == NULL || (count > 0 && map == NULL)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !mock_ordinal_valid(map[i].location.id))
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location) {
    MOCK_REQUIRE_INIT();
    struct mock_pool *pool = pool_of(memPool);
    if (flags == NULL || location == NULL || pool == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE || !mock_ordinal_valid(location->id)) return CUDA_ERROR_INVALID_VALUE;
    *flags = location->id == pool->ordinal ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

static CUresult allocate_from_pool(CUdeviceptr *dptr, size_t bytesize, struct mock_pool *pool, CUstream hStream,
                                   bool per_thread) {
    if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (pool == NULL) pool = mock_driver.current_pool[stream->context->ordinal];
    if (stream->capture != NULL) return mock_capture_alloc(stream, dptr, bytesize, pool->ordinal);
    return mock_allocate_device(dptr, bytesize, pool->ordinal, MOCK_ALLOC_POOL, NULL, pool);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return allocate_from_pool(dptr, bytesize, NULL, hStream, false);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    return allocate_from_pool(dptr, bytesize, NULL, hStream, true);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    MOCK_REQUIRE_INIT();
    struct mock_pool *target = pool_of(pool);
    return target == NULL ? CUDA_ERROR_INVALID_VALUE : allocate_from_pool(dptr, bytesize, target, hStream, false);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) {
    MOCK_REQUIRE_INIT();
    struct mock_pool *target = pool_of(pool);
    return target == NULL ? CUDA_ERROR_INVALID_VALUE : allocate_from_pool(dptr, bytesize, target, hStream, true);
}

/* The block returns to the device when the stream reaches the free: after the work queued on it before. */
static CUresult free_async(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    if (dptr == 0) return CUDA_ERROR_INVALID_VALUE;
    if (stream->capture != NULL) return mock_capture_free(stream, dptr);
    uint64_t reached = (!stream->per_thread && stream == &stream->context->legacy_stream)
                           ? atomic_load(&stream->context->last_end_ns)
                           : atomic_load(&stream->last_end_ns);
    return free_in_stream_order(dptr, reached);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream, false); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) { return free_async(dptr, hStream, true); }

/* ---- virtual memory management ------------------------------------------------------------- */

static struct mock_vmm_allocation *vmm_of(CUmemGenericAllocationHandle handle) {
    struct mock_vmm_allocation *allocation = (struct mock_vmm_allocation *)(uintptr_t)handle;
    return (allocation != NULL && allocation->magic == MOCK_VMM_MAGIC) ? allocation : NULL;
}

static void vmm_unreference(struct mock_vmm_allocation *allocation) {
    if (atomic_fetch_sub(&allocation->references, 1) != 1) return;
    if (allocation->charged) mock_uncharge_device(allocation->ordinal, allocation->size);
    close(allocation->fd);
    allocation->magic = MOCK_DEAD_MAGIC;
    free(allocation);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
    if (granularity == NULL || prop == NULL || (int)option < 0 || option > CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && !mock_ordinal_valid(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    *granularity = MOCK_VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

static int create_backing(size_t size) {
    int fd = memfd_create("vgpu-mock-vmm", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    if (handle == NULL || prop == NULL || flags != 0 || size == 0 || size % MOCK_VMM_GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED; /* host VMM: not modelled */
    if (!mock_ordinal_valid(prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
    int ordinal = prop->location.id;
    if (mock_device_lost(ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (!mock_charge_device(ordinal, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    struct mock_vmm_allocation *allocation = calloc(1, sizeof *allocation);
    int fd = allocation != NULL ? create_backing(size) : -1;
    if (fd < 0) {
        free(allocation);
        mock_uncharge_device(ordinal, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    allocation->magic = MOCK_VMM_MAGIC;
    allocation->fd = fd;
    allocation->size = size;
    allocation->ordinal = ordinal;
    allocation->charged = true;
    allocation->prop = *prop;
    atomic_store(&allocation->references, 1);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)allocation;
    return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    MOCK_REQUIRE_INIT();
    struct mock_vmm_allocation *allocation = vmm_of(handle);
    if (allocation == NULL) return CUDA_ERROR_INVALID_VALUE;
    vmm_unreference(allocation); /* physical memory lives on while mapped */
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags) {
    if (ptr == NULL || size == 0 || size % MOCK_VMM_GRANULARITY != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    size_t align = alignment > MOCK_VMM_GRANULARITY ? alignment : MOCK_VMM_GRANULARITY;
    /* Over-reserve and trim so the range starts on the requested alignment; the address hint is
     * honoured when it is free, as with the real driver. */
    void *hint = (void *)(uintptr_t)addr;
    char *raw = mmap(hint, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = round_up((uintptr_t)raw, align);
    if (start > (uintptr_t)raw) munmap(raw, start - (uintptr_t)raw);
    size_t tail = (uintptr_t)raw + size + align - (start + size);
    if (tail > 0) munmap((void *)(start + size), tail);
    struct mock_allocation *range = calloc(1, sizeof *range);
    if (range == NULL) {
        munmap((void *)start, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *range = (struct mock_allocation){.base = start, .size = size, .mapped_size = size, .kind = MOCK_ALLOC_VMM_RANGE,
                                      .ordinal = -1, .buffer_id = mock_next_id()};
    if (record_allocation(range) != CUDA_SUCCESS) {
        munmap((void *)start, size);
        free(range);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = start;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    MOCK_REQUIRE_INIT();
    struct mock_allocation *range = take_allocation(ptr, KIND(MOCK_ALLOC_VMM_RANGE));
    if (range == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (range->size != size) { /* the whole reservation must be freed at once */
        record_allocation(range);
        return CUDA_ERROR_INVALID_VALUE;
    }
    release_allocation(range);
    return CUDA_SUCCESS;
}

/* True if [ptr, ptr+size) lies inside one reserved range. */
static bool inside_reservation(CUdeviceptr ptr, size_t size) {
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_allocation *range = mock_find_allocation(ptr);
    bool inside = range != NULL && range->kind == MOCK_ALLOC_VMM_RANGE && ptr - range->base + size <= range->size;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    return inside;
}

/* One cuMemMap call: which physical allocation backs [base, base+size) and the access granted. */
struct mock_vmm_mapping {
    struct mock_vmm_allocation *allocation;
    size_t size;
    unsigned long long access;
};

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags) {
    MOCK_REQUIRE_INIT();
    struct mock_vmm_allocation *allocation = vmm_of(handle);
    if (allocation == NULL || flags != 0 || size == 0 || size % MOCK_VMM_GRANULARITY != 0 ||
        offset % MOCK_VMM_GRANULARITY != 0 || offset + size > allocation->size)
        return CUDA_ERROR_INVALID_VALUE;
    if (!inside_reservation(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
    struct mock_vmm_mapping *mapping = calloc(1, sizeof *mapping);
    if (mapping == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *mapping = (struct mock_vmm_mapping){.allocation = allocation, .size = size, .access = CU_MEM_ACCESS_FLAGS_PROT_NONE};
    pthread_mutex_lock(&mock_driver.memory_lock);
    bool taken = vgpu_ptrmap_get(&mock_driver.vmm_mappings, ptr) != NULL;
    bool stored = !taken && vgpu_ptrmap_put(&mock_driver.vmm_mappings, ptr, mapping);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (!stored) {
        free(mapping);
        return taken ? CUDA_ERROR_ALREADY_MAPPED : CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* Mapped inaccessible; cuMemSetAccess grants access, as on a GPU. */
    void *mapped = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, allocation->fd, (off_t)offset);
    if (mapped == MAP_FAILED) {
        pthread_mutex_lock(&mock_driver.memory_lock);
        vgpu_ptrmap_remove(&mock_driver.vmm_mappings, ptr);
        pthread_mutex_unlock(&mock_driver.memory_lock);
        free(mapping);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    atomic_fetch_add(&allocation->references, 1);
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    MOCK_REQUIRE_INIT();
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_vmm_mapping *mapping = vgpu_ptrmap_get(&mock_driver.vmm_mappings, ptr);
    bool valid = mapping != NULL && mapping->size == size;
    if (valid) vgpu_ptrmap_remove(&mock_driver.vmm_mappings, ptr);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (!valid) return CUDA_ERROR_INVALID_VALUE;
    /* Put the reservation's inaccessible placeholder back. */
    mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    vmm_unreference(mapping->allocation);
    free(mapping);
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    MOCK_REQUIRE_INIT();
    if (desc == NULL || count == 0 || size == 0 || !inside_reservation(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long access = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (!location_valid(desc[i].location)) return CUDA_ERROR_INVALID_VALUE;
        if (desc[i].flags > access) access = desc[i].flags;
    }
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_vmm_mapping *mapping = vgpu_ptrmap_get(&mock_driver.vmm_mappings, ptr);
    if (mapping != NULL) mapping->access = access;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (mapping == NULL) return CUDA_ERROR_INVALID_VALUE;
    int protection = access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
                     : access == CU_MEM_ACCESS_FLAGS_PROT_READ   ? PROT_READ
                                                                 : PROT_NONE;
    return mprotect((void *)(uintptr_t)ptr, size, protection) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr) {
    MOCK_REQUIRE_INIT();
    if (flags == NULL || location == NULL || !location_valid(*location)) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_vmm_mapping *mapping = vgpu_ptrmap_get(&mock_driver.vmm_mappings, ptr);
    unsigned long long access = mapping != NULL ? mapping->access : 0;
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (mapping == NULL) return CUDA_ERROR_INVALID_VALUE;
    *flags = access;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle) {
    MOCK_REQUIRE_INIT();
    struct mock_vmm_allocation *allocation = vmm_of(handle);
    if (prop == NULL || allocation == NULL) return CUDA_ERROR_INVALID_VALUE;
    *prop = allocation->prop;
    return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
    MOCK_REQUIRE_INIT();
    if (handle == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mock_driver.memory_lock);
    struct mock_vmm_mapping *mapping = vgpu_ptrmap_get(&mock_driver.vmm_mappings, (CUdeviceptr)(uintptr_t)addr);
    struct mock_vmm_allocation *allocation = mapping != NULL ? mapping->allocation : NULL;
    if (allocation != NULL) atomic_fetch_add(&allocation->references, 1);
    pthread_mutex_unlock(&mock_driver.memory_lock);
    if (allocation == NULL) return CUDA_ERROR_INVALID_VALUE;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)allocation;
    return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType, unsigned long long flags) {
    MOCK_REQUIRE_INIT();
    struct mock_vmm_allocation *allocation = vmm_of(handle);
    if (shareableHandle == NULL || allocation == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
    int fd = dup(allocation->fd);
    if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType) {
    MOCK_REQUIRE_INIT();
    if (handle == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
    int source = (int)(intptr_t)osHandle;
    struct stat info;
    if (fstat(source, &info) != 0 || info.st_size <= 0) return CUDA_ERROR_INVALID_VALUE;
    struct mock_vmm_allocation *allocation = calloc(1, sizeof *allocation);
    int fd = allocation != NULL ? dup(source) : -1;
    if (fd < 0) {
        free(allocation);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* The exporter's allocation already holds the device memory; the import adds no charge. */
    allocation->magic = MOCK_VMM_MAGIC;
    allocation->fd = fd;
    allocation->size = (size_t)info.st_size;
    allocation->ordinal = 0;
    allocation->charged = false;
    allocation->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    allocation->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    allocation->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    atomic_store(&allocation->references, 1);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)allocation;
    return CUDA_SUCCESS;
}

/* ---- arrays -------------------------------------------------------------------------------- */

/* Bytes of one level; 0 for an invalid descriptor. Height 0 means 1D and depth 0 means 2D. */
static size_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *descriptor, size_t *element_bytes) {
    size_t element = vgpu_array_format_bytes(descriptor->Format);
    unsigned channels = descriptor->NumChannels;
    if (element == 0 || (channels != 1 && channels != 2 && channels != 4) || descriptor->Width == 0) return 0;
    if (descriptor->Depth > 0 && descriptor->Height == 0) return 0;
    element *= channels;
    size_t height = descriptor->Height ? descriptor->Height : 1, depth = descriptor->Depth ? descriptor->Depth : 1;
    if (descriptor->Width > SIZE_MAX / element / height / depth) return 0;
    *element_bytes = element;
    return descriptor->Width * height * depth * element;
}

struct mock_array *mock_array_from_handle(CUarray handle) {
    struct mock_array *array = (struct mock_array *)handle;
    return (array != NULL && array->magic == MOCK_ARRAY_MAGIC) ? array : NULL;
}

static CUresult create_array(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *descriptor) {
    if (pHandle == NULL || descriptor == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    size_t element = 0, bytes = array_bytes(descriptor, &element);
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (mock_device_lost(context->ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (!mock_charge_device(context->ordinal, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
    struct mock_array *array = calloc(1, sizeof *array);
    char *data = array != NULL ? reserve_address_space(round_up(bytes, page_size())) : NULL;
    if (data == NULL) {
        free(array);
        mock_uncharge_device(context->ordinal, bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *array = (struct mock_array){.magic = MOCK_ARRAY_MAGIC, .descriptor = *descriptor, .element_bytes = element,
                                 .bytes = bytes, .data = data, .ordinal = context->ordinal, .context = context,
                                 .owns_data = true, .charged_bytes = bytes};
    *pHandle = (CUarray)array;
    return CUDA_SUCCESS;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
    if (pAllocateArray == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR descriptor = {.Width = pAllocateArray->Width, .Height = pAllocateArray->Height,
                                          .Format = pAllocateArray->Format, .NumChannels = pAllocateArray->NumChannels};
    return create_array(pHandle, &descriptor);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
    return create_array(pHandle, pAllocateArray);
}

CUresult cuArrayDestroy(CUarray hArray) {
    MOCK_REQUIRE_INIT();
    struct mock_array *array = mock_array_from_handle(hArray);
    if (array == NULL || !array->owns_data) return CUDA_ERROR_INVALID_HANDLE;
    munmap(array->data, round_up(array->bytes, page_size()));
    mock_uncharge_device(array->ordinal, array->charged_bytes);
    array->magic = MOCK_DEAD_MAGIC;
    free(array);
    return CUDA_SUCCESS;
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
    MOCK_REQUIRE_INIT();
    struct mock_array *array = mock_array_from_handle(hArray);
    if (pArrayDescriptor == NULL || array == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (array->descriptor.Depth > 0) return CUDA_ERROR_INVALID_VALUE;
    *pArrayDescriptor = (CUDA_ARRAY_DESCRIPTOR){.Width = array->descriptor.Width, .Height = array->descriptor.Height,
                                                .Format = array->descriptor.Format, .NumChannels = array->descriptor.NumChannels};
    return CUDA_SUCCESS;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
    MOCK_REQUIRE_INIT();
    struct mock_array *array = mock_array_from_handle(hArray);
    if (pArrayDescriptor == NULL || array == NULL) return CUDA_ERROR_INVALID_VALUE;
    *pArrayDescriptor = array->descriptor;
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels) {
    if (pHandle == NULL || pMipmappedArrayDesc == NULL || numMipmapLevels == 0 || numMipmapLevels > 32)
        return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_mipmap *mipmap = calloc(1, sizeof *mipmap);
    struct mock_array *levels = calloc(numMipmapLevels, sizeof *levels);
    size_t total = 0, offsets[32];
    for (unsigned level = 0; level < numMipmapLevels && levels != NULL; level++) {
        CUDA_ARRAY3D_DESCRIPTOR descriptor = *pMipmappedArrayDesc;
        descriptor.Width = vgpu_mipmap_extent(descriptor.Width, level);
        descriptor.Height = vgpu_mipmap_extent(descriptor.Height, level);
        descriptor.Depth = vgpu_mipmap_extent(descriptor.Depth, level);
        size_t element = 0, bytes = array_bytes(&descriptor, &element);
        if (bytes == 0) {
            free(levels);
            free(mipmap);
            return CUDA_ERROR_INVALID_VALUE;
        }
        offsets[level] = total;
        total += round_up(bytes, 256);
        levels[level] = (struct mock_array){.magic = MOCK_ARRAY_MAGIC, .descriptor = descriptor, .element_bytes = element,
                                            .bytes = bytes, .ordinal = context->ordinal, .context = context};
    }
    if (mipmap == NULL || levels == NULL) {
        free(levels);
        free(mipmap);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!mock_charge_device(context->ordinal, total)) {
        free(levels);
        free(mipmap);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    char *data = reserve_address_space(round_up(total, page_size()));
    if (data == NULL) {
        mock_uncharge_device(context->ordinal, total);
        free(levels);
        free(mipmap);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (unsigned level = 0; level < numMipmapLevels; level++) levels[level].data = data + offsets[level];
    *mipmap = (struct mock_mipmap){.magic = MOCK_MIPMAP_MAGIC, .levels = numMipmapLevels, .level_arrays = levels,
                                   .data = data, .bytes = total, .ordinal = context->ordinal, .context = context};
    *pHandle = (CUmipmappedArray)mipmap;
    return CUDA_SUCCESS;
}

static struct mock_mipmap *mipmap_of(CUmipmappedArray handle) {
    struct mock_mipmap *mipmap = (struct mock_mipmap *)handle;
    return (mipmap != NULL && mipmap->magic == MOCK_MIPMAP_MAGIC) ? mipmap : NULL;
}

CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level) {
    MOCK_REQUIRE_INIT();
    struct mock_mipmap *mipmap = mipmap_of(hMipmappedArray);
    if (pLevelArray == NULL || mipmap == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (level >= mipmap->levels) return CUDA_ERROR_INVALID_VALUE;
    *pLevelArray = (CUarray)&mipmap->level_arrays[level];
    return CUDA_SUCCESS;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray) {
    MOCK_REQUIRE_INIT();
    struct mock_mipmap *mipmap = mipmap_of(hMipmappedArray);
    if (mipmap == NULL) return CUDA_ERROR_INVALID_HANDLE;
    munmap(mipmap->data, round_up(mipmap->bytes, page_size()));
    mock_uncharge_device(mipmap->ordinal, mipmap->bytes);
    for (unsigned level = 0; level < mipmap->levels; level++) mipmap->level_arrays[level].magic = MOCK_DEAD_MAGIC;
    free(mipmap->level_arrays);
    mipmap->magic = MOCK_DEAD_MAGIC;
    free(mipmap);
    return CUDA_SUCCESS;
}
