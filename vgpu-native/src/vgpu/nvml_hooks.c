/* NVML memory reporting: nvidia-smi, monitoring agents and frameworks that read NVML inside the
 * container see the limit as total memory and the container's usage as used memory.
 *
 * An NVML handle is matched to a CUDA ordinal by UUID: from this process's CUDA devices, else from
 * the UUIDs CUDA processes published in the shared region, else by applying CUDA_VISIBLE_DEVICES to
 * NVML's own enumeration. nvmlDeviceGetIndex is never used: it names physical GPUs, which differ from
 * the container's ordinals as soon as a runtime exposes a subset of the GPUs. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/visible.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

#define HANDLE_CACHE 64

/* Write-once entries: the ordinal is stored before the handle is published. */
static struct {
    _Atomic(nvmlDevice_t) handle;
    int ordinal;
} handle_ordinals[HANDLE_CACHE];
static _Atomic unsigned handle_count;
VGPU_MUTEX(handle_lock);

static int ordinal_of_uuid_in_region(const struct vgpu_region *region, const char *uuid) {
    for (int i = 0; i < VGPU_REGION_DEVICES; i++)
        if (region->devices[i].uuid[0] != '\0' && strcasecmp(region->devices[i].uuid, uuid) == 0) return i;
    return -1;
}

/* Without CUDA: NVML enumerates the devices the container can open, in PCI order, which is the
 * order CUDA numbers them before CUDA_VISIBLE_DEVICES. */
static int ordinal_from_enumeration(const char *uuid) {
    unsigned count = 0;
    if (real.nvmlDeviceGetCount_v2 == NULL || real.nvmlDeviceGetHandleByIndex_v2 == NULL ||
        real.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return -1;
    if (count > VGPU_MAX_DEVICES) count = VGPU_MAX_DEVICES;
    char uuids[VGPU_MAX_DEVICES][NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    const char *names[VGPU_MAX_DEVICES];
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t handle = NULL;
        uuids[i][0] = '\0';
        if (real.nvmlDeviceGetHandleByIndex_v2(i, &handle) == NVML_SUCCESS)
            real.nvmlDeviceGetUUID(handle, uuids[i], sizeof uuids[i]);
        names[i] = uuids[i];
    }
    int order[VGPU_MAX_DEVICES];
    int visible = vgpu_cuda_visible_order(getenv("CUDA_VISIBLE_DEVICES"), names, (int)count, order);
    for (int ordinal = 0; ordinal < visible; ordinal++)
        if (strcasecmp(uuids[order[ordinal]], uuid) == 0) return ordinal;
    return -1;
}

static int resolve_ordinal(nvmlDevice_t handle, struct vgpu_region *region) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (real.nvmlDeviceGetUUID == NULL || real.nvmlDeviceGetUUID(handle, uuid, sizeof uuid) != NVML_SUCCESS) return -1;
    if (vgpu_active()) {
        for (int i = 0; i < runtime.device_count; i++)
            if (strcasecmp(runtime.devices[i].uuid, uuid) == 0) return i;
        return -1; /* not one of this process's CUDA devices */
    }
    int ordinal = ordinal_of_uuid_in_region(region, uuid);
    return ordinal >= 0 ? ordinal : ordinal_from_enumeration(uuid);
}

static int ordinal_of_handle(nvmlDevice_t handle, struct vgpu_region *region) {
    unsigned known = atomic_load_explicit(&handle_count, memory_order_acquire);
    for (unsigned i = 0; i < known; i++)
        if (atomic_load_explicit(&handle_ordinals[i].handle, memory_order_acquire) == handle) return handle_ordinals[i].ordinal;
    int ordinal = resolve_ordinal(handle, region);
    pthread_mutex_lock(&handle_lock);
    unsigned slot = atomic_load(&handle_count);
    if (slot < HANDLE_CACHE) {
        handle_ordinals[slot].ordinal = ordinal;
        atomic_store_explicit(&handle_ordinals[slot].handle, handle, memory_order_release);
        atomic_store_explicit(&handle_count, slot + 1, memory_order_release);
    }
    pthread_mutex_unlock(&handle_lock);
    return ordinal;
}

/* Without nvmlDeviceGetHandleByUUID (older or trimmed NVMLs): the enumerated handle with that UUID. */
static nvmlDevice_t enumerated_handle_of(const char *uuid) {
    unsigned count = 0;
    if (real.nvmlDeviceGetCount_v2 == NULL || real.nvmlDeviceGetHandleByIndex_v2 == NULL || real.nvmlDeviceGetUUID == NULL ||
        real.nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS)
        return NULL;
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t handle = NULL;
        char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        if (real.nvmlDeviceGetHandleByIndex_v2(i, &handle) == NVML_SUCCESS &&
            real.nvmlDeviceGetUUID(handle, text, sizeof text) == NVML_SUCCESS && strcasecmp(text, uuid) == 0)
            return handle;
    }
    return NULL;
}

nvmlDevice_t vgpu_nvml_handle_of(int ordinal) {
    if (!vgpu_load_nvml() || ordinal < 0 || ordinal >= runtime.device_count || runtime.devices[ordinal].uuid[0] == '\0')
        return NULL;
    const char *uuid = runtime.devices[ordinal].uuid;
    if (real.nvmlDeviceGetHandleByUUID == NULL) return enumerated_handle_of(uuid);
    nvmlDevice_t handle = NULL;
    return real.nvmlDeviceGetHandleByUUID(uuid, &handle) == NVML_SUCCESS ? handle : NULL;
}

enum view { VIEW_DRIVER, VIEW_CONTAINER, VIEW_UNTRUSTWORTHY, VIEW_REFUSED };

/* With VGPU_DEVICES the handle's own UUID names its grant, whatever order NVML enumerates the cards
 * in. -1 for a card not granted, and for one whose UUID cannot be read (it cannot be shown granted). */
static int grant_of_handle(const struct vgpu_config *config, nvmlDevice_t device, char *uuid, size_t size) {
    unsigned char bytes[16];
    if (real.nvmlDeviceGetUUID == NULL || real.nvmlDeviceGetUUID(device, uuid, (unsigned)size) != NVML_SUCCESS) {
        vgpu_copy_string(uuid, "(UUID unreadable)", size);
        return -1;
    }
    return vgpu_uuid_parse(uuid, bytes) ? vgpu_config_grant_of(config, bytes) : -1;
}

/* One line per refused card and process (nvidia-smi asks several times per card). */
static void report_refused_handle(const struct vgpu_config *config, const char *uuid) {
    static char reported[VGPU_MAX_DEVICES][NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    static int reported_count;
    pthread_mutex_lock(&handle_lock);
    bool known = false;
    for (int i = 0; i < reported_count && !known; i++) known = strcmp(reported[i], uuid) == 0;
    if (!known && reported_count < VGPU_MAX_DEVICES) vgpu_copy_string(reported[reported_count++], uuid, sizeof reported[0]);
    pthread_mutex_unlock(&handle_lock);
    if (!known)
        LOG_ERROR("NVML device %s is refused: it is not among VGPU_DEVICES of %s; its memory queries return "
                  "NVML_ERROR_NO_PERMISSION", uuid, config->source);
}

/* The container's view of one device: VIEW_DRIVER when the real numbers stand, VIEW_UNTRUSTWORTHY when
 * the limits are malformed or the region cannot be read (nothing trustworthy can be reported),
 * VIEW_REFUSED for a card VGPU_DEVICES does not grant. */
static enum view container_view(nvmlDevice_t device, uint64_t device_total, uint64_t *total, uint64_t *used) {
    const struct vgpu_config *config = vgpu_config_get();
    if (config == NULL) {
        static _Atomic int reported;
        if (!atomic_exchange(&reported, 1)) LOG_ERROR("NVML memory queries refused: %s", vgpu_config_error());
        return VIEW_UNTRUSTWORTHY;
    }
    if (config->disable_control) return VIEW_DRIVER;
    struct vgpu_region *region = vgpu_runtime_region();
    if (region == NULL) return VIEW_UNTRUSTWORTHY;
    uint64_t limit = 0;
    int entry = -1, ordinal = -1; /* the card's entry in the region; this process's CUDA ordinal of it, if any */
    if (config->granted_count > 0) {
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        int grant = grant_of_handle(config, device, uuid, sizeof uuid);
        if (grant < 0) {
            report_refused_handle(config, uuid);
            return VIEW_REFUSED;
        }
        limit = config->memory_limit[grant];
        entry = grant; /* the region is indexed by place in VGPU_DEVICES too */
        if (vgpu_active()) ordinal = ordinal_of_handle(device, region);
    } else {
        ordinal = entry = ordinal_of_handle(device, region);
        if (ordinal < 0 || ordinal >= VGPU_REGION_DEVICES) return VIEW_DRIVER;
        limit = config->memory_limit[ordinal]; /* the region's limit words are not trusted */
    }
    if (limit == 0) return VIEW_DRIVER;
    *total = (config->oversubscribe || limit < device_total) ? limit : device_total;
    if (vgpu_active() && ordinal >= 0) {
        *used = vgpu_usage_view(ordinal, limit);
    } else { /* NVML only: nothing booked here; a corrupt region reads as full */
        uint64_t shared = atomic_load_explicit(&region->devices[entry].memory_used, memory_order_relaxed);
        *used = vgpu_region_intact(region) && shared <= limit ? shared : UINT64_MAX;
    }
    return VIEW_CONTAINER;
}

/* Rewrites the driver's numbers (already in *total, *used, *free_bytes) with the container's view.
 * NVML promises total = used + free; over the limit that reads as full, never as a wrapped free. */
static nvmlReturn_t apply_view(nvmlDevice_t device, nvmlReturn_t result, unsigned long long *total,
                               unsigned long long *used, unsigned long long *free_bytes, unsigned long long *reserved) {
    uint64_t view_total = 0, view_used = 0;
    if (result != NVML_SUCCESS) return result;
    switch (container_view(device, *total, &view_total, &view_used)) {
    case VIEW_DRIVER: return result;
    case VIEW_UNTRUSTWORTHY: return NVML_ERROR_UNKNOWN;
    case VIEW_REFUSED: /* nothing of the card's real numbers is the container's to see */
        *total = *used = *free_bytes = 0;
        if (reserved != NULL) *reserved = 0;
        return NVML_ERROR_NO_PERMISSION;
    case VIEW_CONTAINER: break;
    }
    *total = view_total;
    *used = view_used < view_total ? view_used : view_total;
    *free_bytes = view_total - *used;
    if (reserved != NULL) *reserved = 0; /* the driver's reservation is outside the container's share */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    if (!vgpu_load_nvml()) return NVML_ERROR_UNINITIALIZED;
    if (real.nvmlDeviceGetMemoryInfo == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t result = real.nvmlDeviceGetMemoryInfo(device, memory);
    return memory == NULL ? result : apply_view(device, result, &memory->total, &memory->used, &memory->free, NULL);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    if (!vgpu_load_nvml()) return NVML_ERROR_UNINITIALIZED;
    if (real.nvmlDeviceGetMemoryInfo_v2 == NULL) return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t result = real.nvmlDeviceGetMemoryInfo_v2(device, memory);
    return memory == NULL ? result
                          : apply_view(device, result, &memory->total, &memory->used, &memory->free, &memory->reserved);
}

/* nvidia-smi and other NVML programs must show the grant: in a container whose grant directory is
 * mounted, NVML's init waits for a grant on its way as cuInit does (config.c). Elsewhere it touches
 * nothing of libvgpu, as before: no configuration, no dlopen. What NVML returns is its own. */
static void *real_init(const char *name, void *const *resolved) {
    vgpu_config_await_grant();
    void *function = vgpu_real_dlsym(RTLD_NEXT, name);
    if (function != NULL) return function;
    vgpu_load_nvml(); /* NVML opened privately (RTLD_LOCAL): the dlsym hook handed out this function */
    return *resolved;
}

nvmlReturn_t nvmlInit_v2(void) {
    nvmlReturn_t (*function)(void) = (nvmlReturn_t (*)(void))real_init("nvmlInit_v2", (void *const *)&real.nvmlInit_v2);
    return function != NULL ? function() : NVML_ERROR_LIBRARY_NOT_FOUND;
}

nvmlReturn_t nvmlInit(void) {
    nvmlReturn_t (*function)(void) = (nvmlReturn_t (*)(void))real_init("nvmlInit", (void *const *)&real.nvmlInit);
    return function != NULL ? function() : NVML_ERROR_LIBRARY_NOT_FOUND;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    nvmlReturn_t (*function)(unsigned int) =
        (nvmlReturn_t (*)(unsigned int))real_init("nvmlInitWithFlags", (void *const *)&real.nvmlInitWithFlags);
    return function != NULL ? function(flags) : NVML_ERROR_LIBRARY_NOT_FOUND;
}
