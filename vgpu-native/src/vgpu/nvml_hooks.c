/* NVML memory reporting: nvidia-smi, monitoring agents and frameworks that read NVML inside the
 * container see the limit as total memory and the container's usage as used memory.
 *
 * An NVML handle is matched to a CUDA ordinal by UUID: from this process's CUDA devices, else from
 * the UUIDs CUDA processes published in the shared region, else by applying CUDA_VISIBLE_DEVICES to
 * NVML's own enumeration. nvmlDeviceGetIndex is never used: it names physical GPUs, which differ from
 * the container's ordinals as soon as a runtime exposes a subset of the GPUs. */
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

/* The container's view of one device, or false when the real numbers stand. *refused is set when the
 * limits are malformed or the region cannot be read: then nothing trustworthy can be reported. */
static bool container_view(nvmlDevice_t device, uint64_t device_total, uint64_t *total, uint64_t *used, bool *refused) {
    *refused = false;
    const struct vgpu_config *config = vgpu_config_get();
    if (config == NULL) {
        static _Atomic int reported;
        if (!atomic_exchange(&reported, 1)) LOG_ERROR("NVML memory queries refused: %s", vgpu_config_error());
        *refused = true;
        return false;
    }
    if (config->disable_control) return false;
    struct vgpu_region *region = vgpu_runtime_region();
    if (region == NULL) {
        *refused = true;
        return false;
    }
    int ordinal = ordinal_of_handle(device, region);
    if (ordinal < 0 || ordinal >= VGPU_REGION_DEVICES) return false;
    uint64_t limit = config->memory_limit[ordinal]; /* the region's limit words are not trusted */
    if (limit == 0) return false;
    *total = (config->oversubscribe || limit < device_total) ? limit : device_total;
    if (vgpu_active()) {
        *used = vgpu_usage_view(ordinal, limit);
    } else { /* NVML only: nothing booked here; a corrupt region reads as full */
        uint64_t shared = atomic_load_explicit(&region->devices[ordinal].memory_used, memory_order_relaxed);
        *used = vgpu_region_intact(region) && shared <= limit ? shared : UINT64_MAX;
    }
    return true;
}

/* Rewrites the driver's numbers (already in *total, *used, *free_bytes) with the container's view.
 * NVML promises total = used + free; over the limit that reads as full, never as a wrapped free. */
static nvmlReturn_t apply_view(nvmlDevice_t device, nvmlReturn_t result, unsigned long long *total,
                               unsigned long long *used, unsigned long long *free_bytes, unsigned long long *reserved) {
    uint64_t view_total = 0, view_used = 0;
    bool refused = false;
    if (result != NVML_SUCCESS) return result;
    if (!container_view(device, *total, &view_total, &view_used, &refused)) return refused ? NVML_ERROR_UNKNOWN : result;
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
