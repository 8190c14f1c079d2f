/* What a container meets for its grant: per CUDA ordinal the memory the driver API and NVML report,
 * the exact allocation boundary, and the limits libvgpu wrote into the container's shared region.
 *
 *   vgpu-conformance grant-report <region>
 *       prints one "device ..." line per CUDA ordinal and one "region ..." line; the Java chain test
 *       (vgpu-k8s ContractChainTest) compares them with the scheduler's grant
 *   vgpu-conformance limits-file-without-env <region> <bytes,...> <percent,...> <priority> <policy>
 *       the same view, checked against the expected limits per ordinal, in a process whose environment
 *       carries no limit at all (a shell that lost it): only the limits file can have set them */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "vgpu/region.h"

#define MAX_ORDINALS VGPU_REGION_DEVICES

struct ordinal_view {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    size_t total;          /* cuMemGetInfo_v2 */
    size_t free_bytes;     /* cuMemGetInfo_v2, after the primary context is charged */
    size_t device_total;   /* cuDeviceTotalMem_v2 */
    uint64_t nvml_total;   /* nvmlDeviceGetMemoryInfo through the hook */
    int over_free;         /* cuMemAlloc_v2(free + 1): CUDA_ERROR_OUT_OF_MEMORY when enforced */
    int at_free;           /* cuMemAlloc_v2(free): CUDA_SUCCESS when the boundary is exact */
};

static void format_uuid(const CUuuid *uuid, char *out, size_t size) {
    const unsigned char *b = (const unsigned char *)uuid->bytes;
    snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
             b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Reads ordinal d's view with its primary context current; the probe allocations are freed again. */
static int read_ordinal(int d, struct ordinal_view *view) {
    CUdevice device;
    CU_OK(cuDeviceGet(&device, d));
    CUuuid uuid;
    CU_OK(cuDeviceGetUuid_v2(&uuid, device));
    format_uuid(&uuid, view->uuid, sizeof view->uuid);
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, device));
    CU_OK(cuCtxSetCurrent(context));
    CU_OK(cuMemGetInfo_v2(&view->free_bytes, &view->total));
    CU_OK(cuDeviceTotalMem_v2(&view->device_total, device));
    nvmlDevice_t handle = NULL;
    NVML_OK(nvmlDeviceGetHandleByUUID(view->uuid, &handle));
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(handle, &memory));
    view->nvml_total = memory.total;
    CUdeviceptr pointer = 0;
    view->over_free = (int)cuMemAlloc_v2(&pointer, view->free_bytes + 1);
    if (view->over_free == CUDA_SUCCESS) cuMemFree_v2(pointer);
    view->at_free = (int)cuMemAlloc_v2(&pointer, view->free_bytes);
    if (view->at_free == CUDA_SUCCESS) CU_OK(cuMemFree_v2(pointer));
    CU_OK(cuDevicePrimaryCtxRelease_v2(device));
    return 0;
}

static const struct vgpu_region *map_region_at(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    void *mapping = mmap(NULL, sizeof(struct vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return mapping == MAP_FAILED ? NULL : mapping;
}

static const char *policy_name(uint32_t policy) {
    return policy == 1 ? "force" : policy == 2 ? "disable" : "default";
}

/* cuInit, NVML init, every ordinal's view, and the region they share. */
static int read_grant(const char *region_path, int *count, struct ordinal_view *views,
                      const struct vgpu_region **region) {
    CU_OK(cuInit(0));
    NVML_OK(nvmlInit_v2());
    CU_OK(cuDeviceGetCount(count));
    EXPECT(*count > 0 && *count <= MAX_ORDINALS, "%d CUDA devices", *count);
    for (int d = 0; d < *count; d++)
        if (read_ordinal(d, &views[d])) return 1;
    *region = map_region_at(region_path);
    EXPECT(*region != NULL, "shared region %s maps", region_path);
    EXPECT((*region)->header.magic == VGPU_REGION_MAGIC && (*region)->header.version == VGPU_REGION_VERSION,
           "shared region %s has layout version %u", region_path, (*region)->header.version);
    return 0;
}

int role_grant_report(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: grant-report <region>");
    int count = 0;
    struct ordinal_view views[MAX_ORDINALS];
    const struct vgpu_region *region = NULL;
    if (read_grant(argv[2], &count, views, &region)) return 1;
    for (int d = 0; d < count; d++) {
        const struct vgpu_region_device *limits = &region->devices[d];
        printf("device %d uuid=%s total=%zu free=%zu device_total=%zu nvml_total=%llu alloc_over_free=%d "
               "alloc_free=%d region_memory_limit=%llu region_sm_limit=%u\n",
               d, views[d].uuid, views[d].total, views[d].free_bytes, views[d].device_total,
               (unsigned long long)views[d].nvml_total, views[d].over_free, views[d].at_free,
               (unsigned long long)limits->memory_limit, limits->sm_limit);
    }
    printf("region devices=%u policy=%s priority=%d oversubscribe=%u source=%s\n", region->header.visible_devices,
           policy_name(region->header.policy), region->header.priority, region->header.flags & 1U,
           region->header.limits_source);
    return 0;
}

/* Parses "a,b,c" into at most max numbers; returns how many. */
static int parse_list(const char *text, unsigned long long *out, int max) {
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item != NULL && n < max; item = strtok_r(NULL, ",", &save))
        out[n++] = strtoull(item, NULL, 10);
    free(copy);
    return n;
}

int check_limits_file_without_env(int argc, char **argv) {
    EXPECT(argc >= 7, "usage: limits-file-without-env <region> <bytes,...> <percent,...> <priority> <policy>");
    extern char **environ;
    for (char **entry = environ; *entry != NULL; entry++)
        EXPECT(strncmp(*entry, "CUDA_DEVICE_MEMORY_LIMIT", 24) != 0 && strncmp(*entry, "CUDA_DEVICE_SM_LIMIT", 20) != 0,
               "the environment carries no limit, but has %s", *entry);
    unsigned long long bytes[MAX_ORDINALS], percents[MAX_ORDINALS];
    int expected = parse_list(argv[3], bytes, MAX_ORDINALS);
    EXPECT(parse_list(argv[4], percents, MAX_ORDINALS) == expected, "as many percentages as limits");
    int count = 0;
    struct ordinal_view views[MAX_ORDINALS];
    const struct vgpu_region *region = NULL;
    if (read_grant(argv[2], &count, views, &region)) return 1;
    EXPECT(count == expected, "%d CUDA devices, the file limits %d", count, expected);
    for (int d = 0; d < count; d++) {
        const struct ordinal_view *v = &views[d];
        EXPECT(v->total == bytes[d] && v->device_total == bytes[d] && v->nvml_total == bytes[d],
               "ordinal %d: cuMemGetInfo %zu, cuDeviceTotalMem %zu, NVML %llu; the file says %llu", d, v->total,
               v->device_total, (unsigned long long)v->nvml_total, bytes[d]);
        EXPECT(v->over_free == CUDA_ERROR_OUT_OF_MEMORY && v->at_free == CUDA_SUCCESS,
               "ordinal %d: free+1 bytes gave %d, free bytes gave %d", d, v->over_free, v->at_free);
        EXPECT(region->devices[d].memory_limit == bytes[d] && region->devices[d].sm_limit == percents[d],
               "ordinal %d: region holds %llu bytes, %u%%", d, (unsigned long long)region->devices[d].memory_limit,
               region->devices[d].sm_limit);
    }
    EXPECT(region->header.priority == atoi(argv[5]), "priority %d", region->header.priority);
    EXPECT(strcmp(policy_name(region->header.policy), argv[6]) == 0, "policy %s", policy_name(region->header.policy));
    EXPECT(strstr(region->header.limits_source, "limits file") != NULL, "limits came from %s", region->header.limits_source);
    fprintf(stderr, "  %d devices limited by the file alone: %s bytes, %s%%\n", count, argv[3], argv[4]);
    return 0;
}
