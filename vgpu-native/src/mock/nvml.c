/*
 * Mock libnvidia-ml.so.1. Devices come from the same configuration as the mock libcuda.so.1; memory
 * in use, the processes on each device and utilization come from the shared mock state, so they
 * follow what mock-driver processes actually do.
 *
 * A device lost by failure injection still answers identity queries (name, UUID, PCI, index, ...)
 * but every query about its current state returns NVML_ERROR_GPU_IS_LOST.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "mock/config.h"
#include "mock/state.h"
#include "nvml_types.h"

#define NVML_MOCK_DRIVER_VERSION "580.82.07"
#define NVML_MOCK_NVML_VERSION "13.580.82.07"
#define DEVICE_MAGIC 0x4e564d44u
#define EVENT_SET_MAGIC 0x45565354u

struct nvmlDevice_st {
    uint32_t magic;
    unsigned physical;
};

static struct nvmlDevice_st device_handles[MOCK_MAX_DEVICES];
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;
static const struct mock_config *config;
static struct mock_state *state;

VGPU_EXPORT nvmlReturn_t vgpuMockSetDeviceLost(unsigned int physicalIndex, int lost);
VGPU_EXPORT nvmlReturn_t vgpuMockRaiseXid(unsigned int physicalIndex, unsigned long long xid);

static bool initialized(void) {
    pthread_mutex_lock(&init_lock);
    bool ready = init_count > 0;
    pthread_mutex_unlock(&init_lock);
    return ready;
}

static nvmlReturn_t initialize(unsigned flags) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t result = NVML_SUCCESS;
    if (init_count == 0) {
        config = mock_config_get();
        state = config != NULL ? mock_state_attach(config) : NULL;
        if (config == NULL || state == NULL) {
            result = NVML_ERROR_UNKNOWN;
        } else if (config->visible_count == 0 && !(flags & NVML_INIT_FLAG_NO_GPUS)) {
            LOG_INFO("no mock GPU is visible (%s, VGPU_MOCK_VISIBLE_DEVICES)", config->source);
            result = NVML_ERROR_NOT_FOUND;
        } else {
            for (unsigned i = 0; i < config->device_count; i++)
                device_handles[i] = (struct nvmlDevice_st){DEVICE_MAGIC, i};
        }
    }
    if (result == NVML_SUCCESS) init_count++;
    pthread_mutex_unlock(&init_lock);
    return result;
}

nvmlReturn_t nvmlInit(void) { return initialize(0); }
nvmlReturn_t nvmlInit_v2(void) { return initialize(0); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return initialize(flags); }

nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&init_lock);
    nvmlReturn_t result = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (init_count > 0) init_count--;
    pthread_mutex_unlock(&init_lock);
    return result;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
        case NVML_SUCCESS: return "Success";
        case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
        case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
        case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
        case NVML_ERROR_NOT_FOUND: return "Not Found";
        case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
        case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
        case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
        case NVML_ERROR_TIMEOUT: return "Timeout";
        case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
        case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
        case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
        case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
        case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
        case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
        case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request.";
        case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
        case NVML_ERROR_IN_USE: return "In use by another client";
        case NVML_ERROR_MEMORY: return "Insufficient Memory";
        case NVML_ERROR_NO_DATA: return "No data";
        case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "Not supported when ECC is enabled";
        case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
        case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
        case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
        case NVML_ERROR_DEPRECATED: return "Deprecated";
        case NVML_ERROR_NOT_READY: return "Not ready";
        case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
        case NVML_ERROR_INVALID_STATE: return "Invalid state";
        case NVML_ERROR_UNKNOWN: return "Unknown Error";
        default: return "Unknown Error";
    }
}

/* ---- system -------------------------------------------------------------------------------- */

static nvmlReturn_t copy_text(char *buffer, unsigned int length, const char *text) {
    if (buffer == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(text) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buffer, text, strlen(text) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    return copy_text(version, length, NVML_MOCK_DRIVER_VERSION);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    return copy_text(version, length, NVML_MOCK_NVML_VERSION); /* valid before nvmlInit, like the real one */
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    if (cudaDriverVersion == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    *cudaDriverVersion = config->driver_version;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    if (name == NULL || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
    char path[64], text[256] = {0};
    snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
    FILE *file = fopen(path, "re");
    if (file == NULL) return NVML_ERROR_NOT_FOUND;
    size_t got = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    if (got == 0) return NVML_ERROR_NOT_FOUND;
    vgpu_copy_string(name, text, length); /* NVML truncates long names */
    return NVML_SUCCESS;
}

/* ---- device lookup ------------------------------------------------------------------------- */

static nvmlReturn_t device_of(nvmlDevice_t handle, const struct mock_device **device) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    if (handle == NULL || handle < &device_handles[0] || handle >= &device_handles[MOCK_MAX_DEVICES] ||
        handle->magic != DEVICE_MAGIC || handle->physical >= config->device_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &config->devices[handle->physical];
    return NVML_SUCCESS;
}

/* For queries about the device's current state, which a lost GPU cannot answer. */
static nvmlReturn_t live_device_of(nvmlDevice_t handle, const struct mock_device **device) {
    nvmlReturn_t result = device_of(handle, device);
    if (result == NVML_SUCCESS && atomic_load(&state->devices[(*device)->physical_index].lost)) return NVML_ERROR_GPU_IS_LOST;
    return result;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (deviceCount == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    *deviceCount = config->visible_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    if (index >= config->visible_count) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &device_handles[config->visible[index]];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    if (uuid == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    for (unsigned i = 0; i < config->visible_count; i++) {
        unsigned physical = config->visible[i];
        if (strcasecmp(config->devices[physical].uuid, uuid) == 0) {
            *device = &device_handles[physical];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

static bool parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *slot) {
    unsigned function = 0;
    int consumed = 0;
    if (sscanf(text, "%x:%x:%x.%x%n", domain, bus, slot, &function, &consumed) == 4 && text[consumed] == '\0') return true;
    *domain = 0;
    return sscanf(text, "%x:%x.%x%n", bus, slot, &function, &consumed) == 3 && text[consumed] == '\0';
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
    if (pciBusId == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    unsigned domain = 0, bus = 0, slot = 0;
    if (!parse_bus_id(pciBusId, &domain, &bus, &slot)) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < config->visible_count; i++) {
        const struct mock_device *candidate = &config->devices[config->visible[i]];
        if (candidate->pci_domain == domain && candidate->pci_bus == bus && candidate->pci_device == slot) {
            *device = &device_handles[candidate->physical_index];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

/* ---- identity ------------------------------------------------------------------------------ */

/* The physical index, also when a visibility filter hides lower-numbered GPUs: this is what broke
 * HAMi-core in the mock-GPU lab, and what vgpu's interposer must cope with. */
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t handle, unsigned int *index) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = index == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *index = device->physical_index;
    return result;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t handle, unsigned int *minorNumber) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = minorNumber == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *minorNumber = device->physical_index; /* /dev/nvidia<minor> */
    return result;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t handle, char *name, unsigned int length) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = device_of(handle, &device);
    return result == NVML_SUCCESS ? copy_text(name, length, device->profile->name) : result;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t handle, char *uuid, unsigned int length) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = device_of(handle, &device);
    return result == NVML_SUCCESS ? copy_text(uuid, length, device->uuid) : result;
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t handle, char *serial, unsigned int length) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = device_of(handle, &device);
    return result == NVML_SUCCESS ? copy_text(serial, length, device->serial) : result;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t handle, nvmlBrandType_t *type) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = type == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *type = strncmp(device->profile->name, "Tesla", 5) == 0 ? NVML_BRAND_TESLA : NVML_BRAND_NVIDIA;
    return result;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t handle, nvmlDeviceArchitecture_t *arch) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = arch == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *arch = device->architecture->nvml_architecture;
    return result;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t handle, int *major, int *minor) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = (major == NULL || minor == NULL) ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) {
        *major = device->profile->cc_major;
        *minor = device->profile->cc_minor;
    }
    return result;
}

static nvmlReturn_t pci_info(nvmlDevice_t handle, nvmlPciInfo_t *pci) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = pci == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", device->pci_domain & 0xffffu,
             device->pci_bus, device->pci_device);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", device->pci_domain, device->pci_bus, device->pci_device);
    pci->domain = device->pci_domain;
    pci->bus = device->pci_bus;
    pci->device = device->pci_device;
    pci->pciDeviceId = device->profile->pci_device_id;
    pci->pciSubSystemId = (device->profile->pci_device_id & 0xffff0000u) | 0x10deu;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t handle, unsigned int *node) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = node == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    if (device->numa_node < 0) return NVML_ERROR_NOT_SUPPORTED;
    *node = (unsigned)device->numa_node;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t handle, unsigned int *numCores) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = numCores == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS)
        *numCores = (unsigned)(device->profile->multiprocessors * device->architecture->cores_per_multiprocessor);
    return result;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t handle, nvmlDeviceAttributes_t *attributes) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = attributes == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    unsigned slices = device->architecture->supports_mig ? 7 : 1;
    *attributes = (nvmlDeviceAttributes_t){.multiprocessorCount = (unsigned)device->profile->multiprocessors,
                                           .sharedCopyEngineCount = 7,
                                           .sharedDecoderCount = 5,
                                           .sharedEncoderCount = device->architecture->supports_mig ? 0 : 1,
                                           .sharedJpegCount = 1,
                                           .sharedOfaCount = 1,
                                           .gpuInstanceSliceCount = slices,
                                           .computeInstanceSliceCount = slices,
                                           .memorySizeMB = device->profile->memory_mib};
    return NVML_SUCCESS;
}

/* ---- memory and processes ------------------------------------------------------------------ */

static uint64_t used_bytes(const struct mock_device *device) {
    mock_state_reap(state); /* memory of killed processes returns, as the driver frees it at exit */
    return atomic_load(&state->devices[device->physical_index].used_bytes);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t handle, nvmlMemory_t *memory) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = memory == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    uint64_t total = device->profile->memory_mib << 20, used = used_bytes(device);
    if (used > total) used = total;
    *memory = (nvmlMemory_t){.total = total, .free = total - used, .used = used};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t handle, nvmlMemory_v2_t *memory) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = memory == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    uint64_t total = device->profile->memory_mib << 20, used = used_bytes(device);
    if (used > total) used = total;
    /* The mock sets no memory aside for the system: reserved is 0 and v1's used equals v2's. */
    *memory = (nvmlMemory_v2_t){.version = nvmlMemory_v2, .total = total, .reserved = 0, .free = total - used, .used = used};
    return NVML_SUCCESS;
}

struct process_entry {
    unsigned pid;
    unsigned long long used;
};

/* Processes holding a context or memory on the device. */
static unsigned list_processes(const struct mock_device *device, struct process_entry *entries) {
    mock_state_reap(state);
    unsigned count = 0;
    for (unsigned i = 0; i < MOCK_MAX_PROCESSES; i++) {
        struct mock_state_process *slot = &state->processes[i];
        if (atomic_load(&slot->state) != MOCK_SLOT_ACTIVE) continue;
        struct mock_state_process_device *usage = &slot->devices[device->physical_index];
        uint64_t used = atomic_load(&usage->used_bytes);
        if (atomic_load(&usage->contexts) == 0 && used == 0) continue;
        entries[count++] = (struct process_entry){(unsigned)slot->pid, used};
    }
    return count;
}

/* NVML's buffer protocol: too small (or *infoCount == 0) reports the count with INSUFFICIENT_SIZE. */
#define RUNNING_PROCESSES(name, type, fill)                                                          \
    nvmlReturn_t name(nvmlDevice_t handle, unsigned int *infoCount, type *infos) {                   \
        const struct mock_device *device = NULL;                                                     \
        nvmlReturn_t result = infoCount == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(handle, &device); \
        if (result != NVML_SUCCESS) return result;                                                   \
        struct process_entry entries[MOCK_MAX_PROCESSES];                                            \
        unsigned count = list_processes(device, entries);                                            \
        if (count > *infoCount || (count > 0 && infos == NULL)) {                                    \
            *infoCount = count;                                                                      \
            return NVML_ERROR_INSUFFICIENT_SIZE;                                                     \
        }                                                                                            \
        for (unsigned i = 0; i < count; i++) {                                                       \
            memset(&infos[i], 0, sizeof infos[i]);                                                   \
            infos[i].pid = entries[i].pid;                                                           \
            infos[i].usedGpuMemory = entries[i].used;                                                \
            fill;                                                                                    \
        }                                                                                            \
        *infoCount = count;                                                                          \
        return NVML_SUCCESS;                                                                         \
    }

RUNNING_PROCESSES(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t, (void)0)
RUNNING_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_v2_t,
                  infos[i].gpuInstanceId = infos[i].computeInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT)
RUNNING_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t,
                  infos[i].gpuInstanceId = infos[i].computeInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT)

/* ---- utilization from the virtual clock ---------------------------------------------------- */

/* The monotonic window [*from, *to) matching wall-clock microseconds since last_seen_us; 0 or a time
 * older than the kept history means the last second. False if last_seen_us is not in the past. */
static bool window_since(unsigned long long last_seen_us, uint64_t *from, uint64_t *to) {
    uint64_t now_mono = vgpu_now_ns(), now_wall_us = vgpu_wall_ns() / 1000;
    if (last_seen_us >= now_wall_us) return false;
    uint64_t span_ns = 1000000000ULL;
    if (last_seen_us > 0 && now_wall_us - last_seen_us < 3000000ULL) span_ns = (now_wall_us - last_seen_us) * 1000;
    if (span_ns < MOCK_BUCKET_NS) span_ns = MOCK_BUCKET_NS;
    *to = now_mono;
    *from = now_mono - span_ns;
    return true;
}

static unsigned percent(uint64_t busy_ns, uint64_t window_ns) {
    uint64_t value = (busy_ns * 100 + window_ns / 2) / window_ns;
    return value > 100 ? 100 : (unsigned)value;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t handle, nvmlUtilization_t *utilization) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = utilization == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    uint64_t from = 0, to = 0;
    window_since(0, &from, &to); /* the last second */
    uint64_t busy = mock_timeline_busy_ns(&state->devices[device->physical_index].timeline, from, to);
    /* No memory-bandwidth model: memory utilization is always 0. */
    *utilization = (nvmlUtilization_t){.gpu = percent(busy, to - from), .memory = 0};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t handle, nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = processSamplesCount == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    uint64_t from = 0, to = 0;
    nvmlProcessUtilizationSample_t samples[MOCK_MAX_PROCESSES];
    unsigned count = 0;
    if (!window_since(lastSeenTimeStamp, &from, &to)) {
        *processSamplesCount = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    unsigned long long stamp = vgpu_wall_ns() / 1000;
    for (unsigned i = 0; i < MOCK_MAX_PROCESSES; i++) {
        struct mock_state_process *slot = &state->processes[i];
        if (atomic_load(&slot->state) != MOCK_SLOT_ACTIVE) continue;
        uint64_t busy = mock_timeline_busy_ns(&slot->devices[device->physical_index].timeline, from, to);
        if (busy == 0) continue;
        samples[count++] = (nvmlProcessUtilizationSample_t){
            .pid = (unsigned)slot->pid, .timeStamp = stamp, .smUtil = percent(busy, to - from)};
    }
    if (count == 0) {
        *processSamplesCount = 0;
        return NVML_ERROR_NOT_FOUND; /* no sample since lastSeenTimeStamp */
    }
    if (utilization == NULL || *processSamplesCount < count) {
        *processSamplesCount = count;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(utilization, samples, count * sizeof samples[0]);
    *processSamplesCount = count;
    return NVML_SUCCESS;
}

/* ---- MIG, topology, NVLink ----------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t handle, unsigned int *currentMode, unsigned int *pendingMode) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = (currentMode == NULL || pendingMode == NULL) ? NVML_ERROR_INVALID_ARGUMENT
                                                                       : live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    if (!device->architecture->supports_mig) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = *pendingMode = device->mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t handle, unsigned int *count) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = count == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *count = device->architecture->supports_mig ? 7 : 0;
    return result;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t handle, unsigned int *isMigDevice) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = isMigDevice == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *isMigDevice = 0; /* MIG instances are not enumerated by the mock */
    return result;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t *pathInfo) {
    const struct mock_device *first = NULL, *second = NULL;
    nvmlReturn_t result = pathInfo == NULL ? NVML_ERROR_INVALID_ARGUMENT : live_device_of(device1, &first);
    if (result == NVML_SUCCESS) result = live_device_of(device2, &second);
    if (result != NVML_SUCCESS) return result;
    if (first == second) *pathInfo = NVML_TOPOLOGY_INTERNAL;
    else if (first->numa_node == second->numa_node) *pathInfo = NVML_TOPOLOGY_NODE;
    else *pathInfo = NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}

static nvmlReturn_t nvlink_of(nvmlDevice_t handle, unsigned int link, const struct mock_device **device) {
    nvmlReturn_t result = live_device_of(handle, device);
    if (result != NVML_SUCCESS) return result;
    if ((*device)->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    return link < (unsigned)(*device)->nvlinks ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t handle, unsigned int link, nvmlEnableState_t *isActive) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = isActive == NULL ? NVML_ERROR_INVALID_ARGUMENT : nvlink_of(handle, link, &device);
    if (result == NVML_SUCCESS) *isActive = NVML_FEATURE_ENABLED;
    return result;
}

nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t handle, unsigned int link, unsigned int *version) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = version == NULL ? NVML_ERROR_INVALID_ARGUMENT : nvlink_of(handle, link, &device);
    if (result == NVML_SUCCESS) *version = (unsigned)device->architecture->nvlink_version;
    return result;
}

/* ---- Xid events ---------------------------------------------------------------------------- */

struct nvmlEventSet_st {
    uint32_t magic;
    pthread_mutex_t lock;
    bool registered[MOCK_MAX_DEVICES];
    uint32_t seen[MOCK_MAX_DEVICES];           /* next Xid sequence number to deliver */
    uint64_t injected[MOCK_MAX_DEVICES];       /* VGPU_MOCK_INJECT xid still to deliver, 0 = none */
};

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t handle, unsigned long long *eventTypes) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = eventTypes == NULL ? NVML_ERROR_INVALID_ARGUMENT : device_of(handle, &device);
    if (result == NVML_SUCCESS) *eventTypes = nvmlEventTypeXidCriticalError;
    return result;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    struct nvmlEventSet_st *created = calloc(1, sizeof *created);
    if (created == NULL) return NVML_ERROR_MEMORY;
    created->magic = EVENT_SET_MAGIC;
    pthread_mutex_init(&created->lock, NULL);
    *set = created;
    return NVML_SUCCESS;
}

/* The Xid that VGPU_MOCK_INJECT ("xid:<physical index>:<code>") asks every event set of this process
 * to receive once for the device, or 0. */
static uint64_t injected_xid(unsigned physical) {
    const char *inject = getenv("VGPU_MOCK_INJECT");
    if (inject == NULL) return 0;
    char list[256];
    vgpu_copy_string(list, inject, sizeof list);
    char *save = NULL;
    for (char *item = strtok_r(list, ",; ", &save); item != NULL; item = strtok_r(NULL, ",; ", &save)) {
        unsigned index = 0;
        unsigned long long code = 0;
        if (sscanf(item, "xid:%u:%llu", &index, &code) == 2 && index == physical && code > 0) return code;
    }
    return 0;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t handle, unsigned long long eventTypes, nvmlEventSet_t set) {
    const struct mock_device *device = NULL;
    nvmlReturn_t result = live_device_of(handle, &device);
    if (result != NVML_SUCCESS) return result;
    if (set == NULL || set->magic != EVENT_SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes == 0 || (eventTypes & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
    unsigned physical = device->physical_index;
    pthread_mutex_lock(&set->lock);
    if (!set->registered[physical]) {
        set->registered[physical] = true;
        set->seen[physical] = atomic_load(&state->devices[physical].xid_count); /* only events from now on */
        set->injected[physical] = injected_xid(physical);
    }
    pthread_mutex_unlock(&set->lock);
    return NVML_SUCCESS;
}

/* Takes the next undelivered Xid of any registered device; false if there is none yet. */
static bool next_event(struct nvmlEventSet_st *set, nvmlEventData_t *data) {
    bool found = false;
    pthread_mutex_lock(&set->lock);
    for (unsigned d = 0; d < MOCK_MAX_DEVICES && !found; d++) {
        if (!set->registered[d]) continue;
        uint64_t code = 0;
        if (set->injected[d] != 0) {
            code = set->injected[d];
            set->injected[d] = 0;
        } else {
            struct mock_state_device *device = &state->devices[d];
            uint32_t count = atomic_load(&device->xid_count);
            if (count - set->seen[d] > MOCK_XID_RING) set->seen[d] = count - MOCK_XID_RING; /* overrun: oldest lost */
            if (set->seen[d] == count) continue;
            uint64_t slot = atomic_load(&device->xid_codes[set->seen[d] % MOCK_XID_RING]);
            if ((uint32_t)(slot >> 32) != set->seen[d]) continue; /* raised but not yet published */
            code = slot & 0xffffffffULL;
            set->seen[d]++;
        }
        *data = (nvmlEventData_t){.device = &device_handles[d],
                                  .eventType = nvmlEventTypeXidCriticalError,
                                  .eventData = code,
                                  .gpuInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT,
                                  .computeInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT};
        found = true;
    }
    pthread_mutex_unlock(&set->lock);
    return found;
}

static nvmlReturn_t wait_event(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    if (set == NULL || set->magic != EVENT_SET_MAGIC || data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t deadline = vgpu_now_ns() + (uint64_t)timeoutms * 1000000ULL;
    for (;;) {
        if (next_event(set, data)) return NVML_SUCCESS;
        if (vgpu_now_ns() >= deadline) return NVML_ERROR_TIMEOUT;
        vgpu_sleep_ns(2000000ULL);
    }
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    return wait_event(set, data, timeoutms);
}

/* The original nvmlEventData_t ended after eventData (24 bytes); legacy callers get only that much. */
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
    if (data == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlEventData_t full;
    nvmlReturn_t result = wait_event(set, &full, timeoutms);
    if (result == NVML_SUCCESS) memcpy(data, &full, offsetof(nvmlEventData_t, gpuInstanceId));
    return result;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    if (!initialized()) return NVML_ERROR_UNINITIALIZED;
    if (set == NULL || set->magic != EVENT_SET_MAGIC) return NVML_ERROR_INVALID_ARGUMENT;
    set->magic = 0;
    pthread_mutex_destroy(&set->lock);
    free(set);
    return NVML_SUCCESS;
}

/* ---- failure injection at run time (for tests, e.g. through JNA) --------------------------- */

static struct mock_state *injection_state(unsigned physical_index) {
    const struct mock_config *loaded = mock_config_get();
    if (loaded == NULL || physical_index >= loaded->device_count) return NULL;
    return mock_state_attach(loaded);
}

nvmlReturn_t vgpuMockSetDeviceLost(unsigned int physicalIndex, int lost) {
    struct mock_state *target = injection_state(physicalIndex);
    if (target == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    mock_state_set_lost(target, physicalIndex, lost != 0);
    return NVML_SUCCESS;
}

nvmlReturn_t vgpuMockRaiseXid(unsigned int physicalIndex, unsigned long long xid) {
    struct mock_state *target = injection_state(physicalIndex);
    if (target == NULL || xid == 0 || xid > 0xffffffffULL) return NVML_ERROR_INVALID_ARGUMENT;
    mock_state_raise_xid(target, physicalIndex, xid);
    return NVML_SUCCESS;
}
