/* Memory limit checks, run with libvgpu.so preloaded over the mock driver and a limit in
 * CUDA_DEVICE_MEMORY_LIMIT (the runner sets 1g). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "mock/state.h"
#include "vgpu/region.h"

static int expect_free(size_t expected, const char *what) {
    size_t free_bytes = 0, total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    EXPECT(free_bytes == expected, "%s: free memory %zu, wanted %zu (difference %lld)", what, free_bytes, expected,
           (long long)free_bytes - (long long)expected);
    return 0;
}

static uint64_t mock_device_used(void) {
    if (real_gpu()) return 0; /* the real driver's own accounting is not visible here */
    struct mock_state *state = mock_state_for_tests();
    return state != NULL ? atomic_load(&state->devices[0].used_bytes) : UINT64_MAX;
}

static int nvml_memory(uint64_t *total, uint64_t *used, uint64_t *free_bytes) {
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device = NULL;
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &device));
    nvmlMemory_t v1;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &v1));
    nvmlMemory_v2_t v2 = {.version = nvmlMemory_v2};
    NVML_OK(nvmlDeviceGetMemoryInfo_v2(device, &v2));
    EXPECT(v1.total == v2.total && v1.used == v2.used && v1.free == v2.free,
           "NVML v1 (%llu/%llu/%llu) and v2 (%llu/%llu/%llu) disagree", v1.total, v1.used, v1.free, v2.total, v2.used,
           v2.free);
    EXPECT(v1.total == v1.used + v1.free, "NVML total %llu != used %llu + free %llu", v1.total, v1.used, v1.free);
    *total = v1.total;
    *used = v1.used;
    *free_bytes = v1.free;
    return 0;
}

int check_over_limit(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    EXPECT(limit > 0, "the runner sets CUDA_DEVICE_MEMORY_LIMIT");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t free_before = 0, total = 0;
    if (memory_info(&free_before, &total)) return 1;
    uint64_t mock_before = mock_device_used(), nvml_total = 0, nvml_used_before = 0, nvml_free = 0, nvml_used_after = 0;
    if (nvml_memory(&nvml_total, &nvml_used_before, &nvml_free)) return 1;
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, 2 * limit), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_before + 1), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(pointer == 0, "a refused allocation must not hand out a pointer");
    if (expect_free(free_before, "after refused allocations")) return 1;
    EXPECT(mock_device_used() == mock_before, "the device gained %lld bytes from refused allocations",
           (long long)(mock_device_used() - mock_before));
    if (nvml_memory(&nvml_total, &nvml_used_after, &nvml_free)) return 1;
    EXPECT(nvml_used_after == nvml_used_before, "NVML used changed by %lld", (long long)(nvml_used_after - nvml_used_before));
    CU_OK(cuMemAlloc_v2(&pointer, free_before)); /* the room is still all there */
    CU_OK(cuMemFree_v2(pointer));
    return expect_free(free_before, "after alloc+free");
}

int check_exact_boundary(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t room = 0, total = 0;
    if (memory_info(&room, &total)) return 1;
    CUdeviceptr all = 0, one = 0, most = 0, rest = 0;
    CU_OK(cuMemAlloc_v2(&all, room));
    if (expect_free(0, "after allocating all free memory")) return 1;
    EXPECT_CU(cuMemAlloc_v2(&one, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree_v2(all));
    if (expect_free(room, "after freeing it")) return 1;
    EXPECT_CU(cuMemAlloc_v2(&one, room + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc_v2(&most, room - 4096));
    CU_OK(cuMemAlloc_v2(&rest, 4096));
    EXPECT_CU(cuMemAlloc_v2(&one, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemFree_v2(rest));
    CU_OK(cuMemFree_v2(most));
    return expect_free(room, "at the end");
}

int check_meminfo_reports_limit(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t free_bytes = 0, total = 0, device_total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    uint64_t context_bytes = expected_context_bytes(limit - free_bytes);
    EXPECT(context_bytes > 0 && context_bytes < 4 * GIB, "context charge %llu", (unsigned long long)context_bytes);
    EXPECT(total == limit, "cuMemGetInfo total %zu, limit %llu", total, (unsigned long long)limit);
    CU_OK(cuDeviceTotalMem_v2(&device_total, 0));
    EXPECT(device_total == limit, "cuDeviceTotalMem %zu, limit %llu", device_total, (unsigned long long)limit);
    /* The primary context's memory is charged: the mock's context takes VGPU_MOCK_CONTEXT_MIB. */
    EXPECT(limit - free_bytes == context_bytes, "context charge %llu, the context took %llu",
           (unsigned long long)(limit - free_bytes), (unsigned long long)context_bytes);
    CUdeviceptr pointer = 0;
    CU_OK(cuMemAlloc_v2(&pointer, 100 * MIB));
    if (expect_free(free_bytes - 100 * MIB, "after a 100 MiB allocation")) return 1;
    uint64_t nvml_total = 0, nvml_used = 0, nvml_free = 0;
    if (nvml_memory(&nvml_total, &nvml_used, &nvml_free)) return 1;
    EXPECT(nvml_total == limit, "NVML total %llu, limit %llu", (unsigned long long)nvml_total, (unsigned long long)limit);
    EXPECT(nvml_used == context_bytes + 100 * MIB, "NVML used %llu, wanted %llu", (unsigned long long)nvml_used,
           (unsigned long long)(context_bytes + 100 * MIB));
    CU_OK(cuMemFree_v2(pointer));
    return 0;
}

int check_null_outputs(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t value = 0;
    EXPECT_CU(cuMemGetInfo_v2(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemGetInfo_v2(NULL, &value)); /* OptiX asks for the total alone */
    EXPECT(value == limit, "total alone: %zu, limit %llu", value, (unsigned long long)limit);
    value = 0;
    CU_OK(cuMemGetInfo_v2(&value, NULL));
    EXPECT(value > 0 && value < limit, "free alone: %zu", value);
    EXPECT_CU(cuDeviceTotalMem_v2(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cuMemAlloc_v2(NULL, 1 * MIB), CUDA_ERROR_INVALID_VALUE);
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device = NULL;
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &device));
    EXPECT_NVML(nvmlDeviceGetMemoryInfo(device, NULL), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_NVML(nvmlDeviceGetMemoryInfo_v2(device, NULL), NVML_ERROR_INVALID_ARGUMENT);
    return 0;
}

/* Allocates with one API, checks the limit view dropped by exactly the expected bytes, frees with
 * the matching API and checks everything came back. */
#define COUNTED(what, expected, allocate, release)                                                      \
    do {                                                                                                \
        size_t before_ = 0, total_ = 0;                                                                 \
        if (memory_info(&before_, &total_)) return 1;                                                   \
        CU_OK(allocate);                                                                                \
        if (expect_free(before_ - (size_t)(expected), what " counted")) return 1;                       \
        CU_OK(release);                                                                                 \
        if (expect_free(before_, what " uncounted")) return 1;                                          \
    } while (0)

static int check_vmm_counted(void) {
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granularity = 0, before = 0, total = 0;
    CU_OK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (memory_info(&before, &total)) return 1;
    CUmemGenericAllocationHandle handle = 0;
    CU_OK(cuMemCreate(&handle, 2 * granularity, &prop, 0));
    if (expect_free(before - 2 * granularity, "cuMemCreate counted")) return 1;
    CUdeviceptr address = 0;
    CU_OK(cuMemAddressReserve(&address, 2 * granularity, 0, 0, 0));
    CU_OK(cuMemMap(address, 2 * granularity, 0, handle, 0));
    CUmemAccessDesc access = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemSetAccess(address, 2 * granularity, &access, 1));
    unsigned pattern = 0xabcdef01, back = 0;
    CU_OK(cuMemcpyHtoD_v2(address + granularity, &pattern, sizeof pattern));
    CU_OK(cuMemcpyDtoH_v2(&back, address + granularity, sizeof back));
    EXPECT(back == pattern, "mapped memory reads back %x", back);
    if (expect_free(before - 2 * granularity, "mapping adds nothing")) return 1;
    CU_OK(cuMemUnmap(address, 2 * granularity));
    CU_OK(cuMemAddressFree(address, 2 * granularity));
    CU_OK(cuMemRelease(handle));
    return expect_free(before, "cuMemRelease uncounted");
}

static int check_context_counted(CUcontext primary) {
    size_t before = 0, total = 0, after_create = 0;
    if (memory_info(&before, &total)) return 1;
    CUcontext second = NULL;
    CU_OK(cuCtxCreate_v2(&second, 0, 0));
    if (memory_info(&after_create, &total)) return 1;
    uint64_t context_bytes = expected_context_bytes(before - after_create);
    EXPECT(context_bytes > 0, "a second context must be charged");
    if (expect_free(before - context_bytes, "a second context charged")) return 1;
    CUdeviceptr leaked = 0;
    CU_OK(cuMemAlloc_v2(&leaked, 10 * MIB));
    if (expect_free(before - context_bytes - 10 * MIB, "allocation in the second context")) return 1;
    CU_OK(cuCtxDestroy_v2(second)); /* frees the allocation it still holds */
    CU_OK(cuCtxSetCurrent(primary));
    return expect_free(before, "destroying the context returned its memory and allocations");
}

int check_allocation_apis(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUdeviceptr pointer = 0;
    size_t pitch = 0;
    COUNTED("cuMemAlloc_v2", 3 * MIB + 123, cuMemAlloc_v2(&pointer, 3 * MIB + 123), cuMemFree_v2(pointer));
    COUNTED("cuMemAllocManaged", 5 * MIB, cuMemAllocManaged(&pointer, 5 * MIB, CU_MEM_ATTACH_GLOBAL), cuMemFree_v2(pointer));
    {
        size_t before = 0, total = 0;
        if (memory_info(&before, &total)) return 1;
        CU_OK(cuMemAllocPitch_v2(&pointer, &pitch, 1000, 37, 4));
        EXPECT(pitch >= 1000, "pitch %zu", pitch);
        if (expect_free(before - pitch * 37, "cuMemAllocPitch_v2 counted with the real pitch")) return 1;
        CU_OK(cuMemFree_v2(pointer));
        if (expect_free(before, "cuMemAllocPitch_v2 uncounted")) return 1;
    }
    COUNTED("cuMemAllocAsync", 7 * MIB, cuMemAllocAsync(&pointer, 7 * MIB, NULL), cuMemFreeAsync(pointer, NULL));
    COUNTED("cuMemAllocAsync_ptsz", 6 * MIB, cuMemAllocAsync_ptsz(&pointer, 6 * MIB, NULL), cuMemFreeAsync_ptsz(pointer, NULL));
    {
        CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED};
        props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = 0;
        CUmemoryPool pool = NULL;
        CU_OK(cuMemPoolCreate(&pool, &props));
        COUNTED("cuMemAllocFromPoolAsync", 9 * MIB, cuMemAllocFromPoolAsync(&pointer, 9 * MIB, pool, NULL),
                cuMemFreeAsync(pointer, NULL));
        CU_OK(cuMemPoolDestroy(pool));
    }
    if (check_vmm_counted()) return 1;
    CUarray array = NULL;
    CUDA_ARRAY_DESCRIPTOR flat = {.Width = 1000, .Height = 500, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    COUNTED("cuArrayCreate_v2", 1000 * 500 * 4 * 4, cuArrayCreate_v2(&array, &flat), cuArrayDestroy(array));
    CUDA_ARRAY3D_DESCRIPTOR cube = {.Width = 64, .Height = 64, .Depth = 64, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 2};
    COUNTED("cuArray3DCreate_v2", 64 * 64 * 64 * 2, cuArray3DCreate_v2(&array, &cube), cuArrayDestroy(array));
    CUmipmappedArray mipmap = NULL;
    CUDA_ARRAY3D_DESCRIPTOR square = {.Width = 256, .Height = 256, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    COUNTED("cuMipmappedArrayCreate", (65536 + 16384 + 4096 + 1024 + 256) * 4, cuMipmappedArrayCreate(&mipmap, &square, 5),
            cuMipmappedArrayDestroy(mipmap));
    if (check_context_counted(context)) return 1;

    /* Every path refuses what does not fit, and the refusal leaves no trace. */
    size_t room = 0, total = 0;
    if (memory_info(&room, &total)) return 1;
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle handle = 0;
    CUDA_ARRAY_DESCRIPTOR huge = {.Width = 65536, .Height = 65536, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    EXPECT_CU(cuMemAllocManaged(&pointer, room + 1, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_CU(cuMemAllocPitch_v2(&pointer, &pitch, room, 2, 4), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_CU(cuMemAllocAsync(&pointer, room + 1, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_CU(cuMemCreate(&handle, (room / (2 * MIB) + 1) * 2 * MIB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_CU(cuArrayCreate_v2(&array, &huge), CUDA_ERROR_OUT_OF_MEMORY);
    return expect_free(room, "after refused allocations on every path");
}

int check_free_paths(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t before = 0, total = 0;
    if (memory_info(&before, &total)) return 1;
    /* Pointers libvgpu never counted go to the driver, and its answer comes back unchanged. */
    EXPECT_CU(cuMemFree_v2((CUdeviceptr)0x12345000), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cuMemFree_v2(0), CUDA_SUCCESS);
    EXPECT_CU(cuMemFreeAsync((CUdeviceptr)0x12345000, NULL), CUDA_ERROR_INVALID_VALUE);
    EXPECT_CU(cuMemRelease((CUmemGenericAllocationHandle)0), CUDA_ERROR_INVALID_VALUE);
    void *host = NULL;
    CU_OK(cuMemAllocHost_v2(&host, 4 * MIB));
    if (expect_free(before, "pinned host memory is not device memory")) return 1;
    EXPECT_CU(cuMemFree_v2((CUdeviceptr)(uintptr_t)host), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(host));
    CUdeviceptr pointer = 0;
    CU_OK(cuMemAlloc_v2(&pointer, 8 * MIB));
    CU_OK(cuMemFree_v2(pointer));
    EXPECT_CU(cuMemFree_v2(pointer), CUDA_ERROR_INVALID_VALUE); /* double free: the driver's error, no second uncount */
    return expect_free(before, "after untracked and double frees");
}

/* Usage above the limit, which only a write into the region can cause (the region is then corrupt):
 * free memory reads 0, never a wrapped-around huge number; NVML reads full (used = total, as NVML
 * promises total = used + free); nothing more can be allocated; and once the usage is back, neither
 * is the region corrupt any more. */
int check_usage_above_limit(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t room = 0, total = 0;
    if (memory_info(&room, &total)) return 1;
    int fd = open(getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE"), O_RDWR | O_CLOEXEC);
    EXPECT(fd >= 0, "region file opens");
    struct vgpu_region *region = mmap(NULL, sizeof *region, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT(region != MAP_FAILED, "region maps");
    atomic_fetch_add(&region->devices[0].memory_used, limit);
    size_t free_bytes = 1;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    uint64_t nvml_total = 0, nvml_used = 0, nvml_free = 1;
    int nvml_failed = nvml_memory(&nvml_total, &nvml_used, &nvml_free);
    CUdeviceptr pointer = 0;
    CUresult allocation = cuMemAlloc_v2(&pointer, 1);
    atomic_fetch_sub(&region->devices[0].memory_used, limit);
    EXPECT(free_bytes == 0 && total == limit, "cuMemGetInfo free %zu total %zu over the limit", free_bytes, total);
    EXPECT(!nvml_failed && nvml_free == 0 && nvml_total == limit && nvml_used == limit,
           "NVML free %llu total %llu used %llu over the limit", (unsigned long long)nvml_free,
           (unsigned long long)nvml_total, (unsigned long long)nvml_used);
    EXPECT(allocation == CUDA_ERROR_OUT_OF_MEMORY, "allocation over the limit returned %d", (int)allocation);
    return expect_free(room, "after the usage came back under the limit");
}
