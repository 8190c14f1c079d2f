package io.vgpu.nvidia.internal;

/**
 * Sizes and field offsets of the NVML structs vgpu reads (x86_64 and aarch64 Linux ABI, NVIDIA's
 * {@code nvml.h}; the same numbers are pinned by static asserts in vgpu-native's {@code
 * nvml_types.h}). Buffers are read at these offsets instead of through JNA {@code Structure}s, which
 * cost reflection on every call.
 */
public final class NvmlLayout {
  private NvmlLayout() {}

  /** {@code NVML_DEVICE_UUID_V2_BUFFER_SIZE}. */
  public static final int UUID_BUFFER = 96;
  /** {@code NVML_DEVICE_NAME_V2_BUFFER_SIZE}. */
  public static final int NAME_BUFFER = 96;
  /** {@code NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE}. */
  public static final int DRIVER_VERSION_BUFFER = 80;
  /** {@code NVML_NVLINK_MAX_LINKS} of current headers (18 before Blackwell); queries stop earlier at the first invalid link. */
  public static final int NVLINK_MAX_LINKS = 36;

  /** {@code nvmlMemory_v2_t}: version, total, reserved, free, used. */
  public static final int MEMORY_V2_SIZE = 40;
  public static final int MEMORY_V2_TOTAL = 8;
  public static final int MEMORY_V2_RESERVED = 16;
  public static final int MEMORY_V2_FREE = 24;
  public static final int MEMORY_V2_USED = 32;
  /** {@code NVML_STRUCT_VERSION(Memory, 2)}: {@code sizeof | 2 << 24}. */
  public static final int MEMORY_V2_VERSION = MEMORY_V2_SIZE | (2 << 24);

  /** {@code nvmlMemory_t}: total, free, used. */
  public static final int MEMORY_V1_SIZE = 24;
  public static final int MEMORY_V1_TOTAL = 0;
  public static final int MEMORY_V1_FREE = 8;
  public static final int MEMORY_V1_USED = 16;

  /** {@code nvmlPciInfo_t}. */
  public static final int PCI_SIZE = 68;
  public static final int PCI_DOMAIN = 16;
  public static final int PCI_BUS = 20;
  public static final int PCI_DEVICE = 24;
  public static final int PCI_DEVICE_ID = 28;
  public static final int PCI_SUBSYSTEM_ID = 32;
  public static final int PCI_BUS_ID = 36;

  /** {@code nvmlDeviceAttributes_t}. */
  public static final int ATTRIBUTES_SIZE = 40;
  public static final int ATTRIBUTES_MULTIPROCESSORS = 0;
  public static final int ATTRIBUTES_MEMORY_MB = 32;

  /** {@code nvmlUtilization_t}: gpu, memory. */
  public static final int UTILIZATION_SIZE = 8;

  /** {@code nvmlProcessInfo_t} (v2/v3 layout): pid, usedGpuMemory, gpuInstanceId, computeInstanceId. */
  public static final int PROCESS_SIZE = 24;
  public static final int PROCESS_USED_MEMORY = 8;
  public static final int PROCESS_GPU_INSTANCE = 16;
  public static final int PROCESS_COMPUTE_INSTANCE = 20;

  /** {@code nvmlEventData_t}: device, eventType, eventData, gpuInstanceId, computeInstanceId. */
  public static final int EVENT_SIZE = 32;
  public static final int EVENT_TYPE = 8;
  public static final int EVENT_DATA = 16;
  public static final int EVENT_GPU_INSTANCE = 24;
  public static final int EVENT_COMPUTE_INSTANCE = 28;

  /** {@code nvmlEventTypeXidCriticalError}. */
  public static final long EVENT_XID_CRITICAL_ERROR = 0x8L;
}
