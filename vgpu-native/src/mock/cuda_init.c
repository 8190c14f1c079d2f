/* Mock driver: initialization, versions, error strings, device queries and cuGetProcAddress. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/proctable.h"
#include "common/visible.h"
#include "common/util.h"
#include "mock/cuda_internal.h"

struct mock_driver mock_driver = {.memory_lock = PTHREAD_MUTEX_INITIALIZER, .graph_lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static bool init_attempted;

/* CUDA ordinals: the devices this process may open, filtered and ordered by CUDA_VISIBLE_DEVICES. */
static int apply_cuda_visible_devices(const struct mock_config *config, const struct mock_device **out) {
    const char *uuids[MOCK_MAX_DEVICES];
    int order[MOCK_MAX_DEVICES];
    for (unsigned i = 0; i < config->visible_count; i++) uuids[i] = config->devices[config->visible[i]].uuid;
    int count = vgpu_cuda_visible_order(getenv("CUDA_VISIBLE_DEVICES"), uuids, (int)config->visible_count, order);
    for (int i = 0; i < count; i++) out[i] = &config->devices[config->visible[order[i]]];
    return count;
}

static CUresult initialize(void) {
    const struct mock_config *config = mock_config_get();
    if (config == NULL) return CUDA_ERROR_NO_DEVICE;
    mock_driver.config = config;
    mock_driver.state = mock_state_attach(config);
    if (mock_driver.state == NULL) return CUDA_ERROR_OPERATING_SYSTEM;
    mock_driver.process = mock_state_register_process(mock_driver.state);
    if (mock_driver.process == NULL) return CUDA_ERROR_OPERATING_SYSTEM;
    mock_driver.count = apply_cuda_visible_devices(config, mock_driver.devices);
    if (mock_driver.count == 0) {
        LOG_INFO("no mock GPU is visible (%s, VGPU_MOCK_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES)", config->source);
        return CUDA_ERROR_NO_DEVICE;
    }
    for (int ordinal = 0; ordinal < mock_driver.count; ordinal++) {
        mock_context_init_primary(ordinal);
        struct mock_pool *pool = &mock_driver.default_pool[ordinal];
        pool->magic = MOCK_POOL_MAGIC;
        pool->ordinal = ordinal;
        pool->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        pool->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        pool->props.location.id = ordinal;
        pool->reuse_flags[0] = pool->reuse_flags[1] = pool->reuse_flags[2] = 1;
        mock_driver.current_pool[ordinal] = pool;
    }
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int Flags) {
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (atomic_load_explicit(&mock_driver.initialized, memory_order_acquire)) return CUDA_SUCCESS;
    pthread_mutex_lock(&init_lock);
    if (!init_attempted) {
        init_attempted = true;
        init_result = initialize();
        if (init_result == CUDA_SUCCESS) atomic_store_explicit(&mock_driver.initialized, 1, memory_order_release);
    }
    pthread_mutex_unlock(&init_lock);
    return init_result;
}

CUresult cuDriverGetVersion(int *driverVersion) {
    if (driverVersion == NULL) return CUDA_ERROR_INVALID_VALUE;
    const struct mock_config *config = mock_config_get();
    *driverVersion = config != NULL ? config->driver_version : 13000;
    return CUDA_SUCCESS;
}

/* ---- error strings ------------------------------------------------------------------------- */

struct error_text {
    CUresult code;
    const char *name;
    const char *description;
};

#define E(code, text) {code, #code, text}
static const struct error_text ERRORS[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized"),
    E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
    E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "API call requires a newer driver"),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain"),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the provided execution affinity is not supported"),
    E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "the provided code uses unsupported device-side synchronization"),
    E(CUDA_ERROR_CONTAINED, "an exception occurred on the device but was contained"),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not completely freed"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    E(CUDA_ERROR_MPS_CONNECTION_FAILED, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    E(CUDA_ERROR_MPS_RPC_FAILURE, "the remote procedural call between the MPS server and the MPS client failed"),
    E(CUDA_ERROR_MPS_SERVER_NOT_READY, "MPS server is not ready to accept new MPS client requests"),
    E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the hardware resources required to create MPS client have been exhausted"),
    E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the hardware resources required to support device connections have been exhausted"),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client has been terminated by the server"),
    E(CUDA_ERROR_CDP_NOT_SUPPORTED, "the module is using CUDA Dynamic Parallelism, which is not supported"),
    E(CUDA_ERROR_CDP_VERSION_MISMATCH, "CUDA Dynamic Parallelism version mismatch"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
    E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    E(CUDA_ERROR_EXTERNAL_DEVICE, "an async error has occurred in an external entity outside of CUDA"),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "a kernel launch error has occurred due to cluster misconfiguration"),
    E(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function handle is not loaded when calling an API that requires a loaded function"),
    E(CUDA_ERROR_INVALID_RESOURCE_TYPE, "one or more resources passed in are not valid resource types for the operation"),
    E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "one or more resources are insufficient or non-applicable for the operation"),
    E(CUDA_ERROR_KEY_ROTATION, "an error happened during the key rotation sequence"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

static const struct error_text *find_error(CUresult code) {
    for (unsigned i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == code) return &ERRORS[i];
    return NULL;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *text = find_error(error);
    *pStr = text != NULL ? text->description : NULL;
    return text != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    const struct error_text *text = find_error(error);
    *pStr = text != NULL ? text->name : NULL;
    return text != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices ------------------------------------------------------------------------------- */

CUresult cuDeviceGetCount(int *count) {
    if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    *count = mock_driver.count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    vgpu_copy_string(name, mock_driver.devices[dev]->profile->name, (size_t)len);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)mock_capacity_bytes(dev);
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev) {
    if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, mock_driver.devices[dev]->uuid_bytes, sizeof uuid->bytes);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return device_uuid(uuid, dev); }

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    if (pciBusId == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const struct mock_device *device = mock_driver.devices[dev];
    char text[32];
    snprintf(text, sizeof text, "%04x:%02x:%02x.0", device->pci_domain, device->pci_bus, device->pci_device);
    vgpu_copy_string(pciBusId, text, (size_t)len);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
    if (dev == NULL || pciBusId == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    int fields = sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &function);
    if (fields < 3) {
        domain = 0; /* "bus:device.function" without a domain */
        fields = sscanf(pciBusId, "%x:%x.%x", &bus, &slot, &function);
        if (fields < 2) return CUDA_ERROR_INVALID_VALUE;
    }
    for (int ordinal = 0; ordinal < mock_driver.count; ordinal++) {
        const struct mock_device *device = mock_driver.devices[ordinal];
        if (device->pci_domain == domain && device->pci_bus == bus && device->pci_device == slot) {
            *dev = ordinal;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

static bool peers_supported(CUdevice a, CUdevice b) {
    return a != b && strcmp(mock_driver.devices[a]->profile->architecture, mock_driver.devices[b]->profile->architecture) == 0;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
    if (canAccessPeer == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev) || !mock_ordinal_valid(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = peers_supported(dev, peerDev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice) {
    if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(srcDevice) || !mock_ordinal_valid(dstDevice) || srcDevice == dstDevice)
        return CUDA_ERROR_INVALID_DEVICE;
    bool peers = peers_supported(srcDevice, dstDevice);
    bool nvlink = mock_driver.devices[srcDevice]->nvlinks > 0 && mock_driver.devices[dstDevice]->nvlinks > 0;
    switch (attrib) {
        case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = nvlink ? 0 : 1; break;
        case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED: *value = peers; break;
        case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED: *value = peers && nvlink; break;
        case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = peers; break;
        case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: *value = 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Values of a data-center GPU of the profile's architecture; what the CSV carries comes from it. */
static bool attribute_value(const struct mock_device *device, CUdevice_attribute attribute, int *value) {
    const struct mock_profile *profile = device->profile;
    const struct mock_architecture *arch = device->architecture;
    int v;
    switch (attribute) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: v = 49152; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = arch->clock_rate_khz; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
        case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = profile->multiprocessors; break;
        case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: v = 512; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = (int)device->pci_bus; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = (int)device->pci_device; break;
        case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = arch->memory_clock_rate_khz; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = arch->memory_bus_width_bits; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = arch->l2_cache_bytes; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: v = profile->max_threads_per_multiprocessor; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE: v = 8192; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE: v = 8192; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = (int)device->pci_domain; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: v = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS: v = 2046; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH: v = 16384; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: v = 2048; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: v = 2046; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH: v = 268435456; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH: v = 131072; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT: v = 65000; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: v = 2097120; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = profile->cc_major; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = profile->cc_minor; break;
        case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH: v = 32768; break;
        case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: v = arch->shared_memory_per_multiprocessor; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: v = (int)device->physical_index; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: v = 2; break;
        case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: v = arch->shared_memory_per_block_optin; break;
        case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: v = arch->max_blocks_per_multiprocessor; break;
        case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: v = profile->cc_major >= 8; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: v = arch->l2_cache_bytes * 3 / 4; break;
        case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: v = 134213632; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: v = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; break;
        case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: v = profile->cc_major >= 9; break;
        case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: v = profile->cc_major >= 9 ? 4 : 1; break;
        case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: v = profile->cc_major >= 9; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_NUMA_ID: v = -1; break;
        case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: v = device->numa_node; break;
        case CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID: v = (int)profile->pci_device_id; break;
        case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID: v = (int)((profile->pci_device_id & 0xffff0000u) | 0x10deu); break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED: v = 0; break;
        case CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED: v = 0; break;
        default: return false;
    }
    *value = v;
    return true;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    if (!mock_ordinal_valid(dev)) return CUDA_ERROR_INVALID_DEVICE;
    return attribute_value(mock_driver.devices[dev], attrib, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- cuGetProcAddress ---------------------------------------------------------------------- */

/* Function pointers in the order of VGPU_PROC_VARIANTS (both expand the same generated list). */
#define VGPU_PROC(base, version, per_thread, symbol) (void *)&symbol,
#define VGPU_PROC_LEGACY(base, version, per_thread) NULL,
static void *const PROC_FUNCTIONS[] = {
#include "cuda_proc_table.h"
};
#undef VGPU_PROC
#undef VGPU_PROC_LEGACY

static CUresult resolve_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
    if ((flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    int driver_version = 0;
    cuDriverGetVersion(&driver_version);
    if (version > driver_version) return CUDA_ERROR_INVALID_VALUE;
    CUdriverProcAddressQueryResult result;
    int index = vgpu_proc_select(symbol, version, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, &result);
    *pfn = index >= 0 ? PROC_FUNCTIONS[index] : NULL;
    if (status != NULL) *status = result;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    return resolve_proc(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolFound) {
    return resolve_proc(symbol, pfn, driverVersion, flags, symbolFound);
}
