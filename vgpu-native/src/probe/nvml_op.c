/* The probe's nvml op: what `nvidia-smi --query-gpu=index,uuid,memory.total,memory.used` shows, read
 * through NVML as nvidia-smi does. The index is nvmlDeviceGetIndex, the physical GPU; memory comes from
 * nvmlDeviceGetMemoryInfo, which libvgpu.so answers with the container's limit and usage. */
#include <stdio.h>

#include "nvml_types.h"
#include "probe/probe.h"

#define MIB (1ULL << 20)

void probe_nvml(void) {
    char list[4096] = "";
    size_t used = 0;
    unsigned count = 0;
    nvmlReturn_t result = nvmlInit_v2();
    if (result != NVML_SUCCESS) {
        probe_note("nvml: nvmlInit_v2 returned %d", (int)result);
        probe_emit("\"op\":\"nvml\",\"result\":%d,\"devices\":[]", (int)result);
        return;
    }
    result = nvmlDeviceGetCount_v2(&count);
    for (unsigned i = 0; i < count && result == NVML_SUCCESS; i++) {
        nvmlDevice_t device = NULL;
        unsigned index = 0;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "", uuid_json[2 * NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        nvmlMemory_t memory = {0};
        if ((result = nvmlDeviceGetHandleByIndex_v2(i, &device)) != NVML_SUCCESS ||
            (result = nvmlDeviceGetIndex(device, &index)) != NVML_SUCCESS ||
            (result = nvmlDeviceGetUUID(device, uuid, sizeof uuid)) != NVML_SUCCESS ||
            (result = nvmlDeviceGetMemoryInfo(device, &memory)) != NVML_SUCCESS)
            break;
        probe_json_text(uuid, uuid_json, sizeof uuid_json);
        used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0,
                                 "%s{\"index\":%u,\"uuid\":\"%s\",\"totalMiB\":%llu,\"usedMiB\":%llu}", i > 0 ? "," : "",
                                 index, uuid_json, memory.total / MIB, memory.used / MIB);
    }
    if (result != NVML_SUCCESS) probe_note("nvml: NVML call returned %d", (int)result);
    nvmlShutdown();
    probe_emit("\"op\":\"nvml\",\"result\":%d,\"devices\":[%s]", (int)result, list);
}
