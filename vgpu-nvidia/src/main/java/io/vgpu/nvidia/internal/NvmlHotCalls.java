package io.vgpu.nvidia.internal;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;

/**
 * The NVML functions a node agent calls on every scrape or health tick, by JNA direct mapping (close
 * to JNI cost, no proxy or reflection per call). Bound once per process by {@link NvmlBinding}; all
 * exist since driver R510.
 */
public final class NvmlHotCalls {
  private NvmlHotCalls() {}

  /** {@code nvmlDeviceGetMemoryInfo_v2(device, nvmlMemory_v2_t *)}; the caller sets the version word. */
  public static native int nvmlDeviceGetMemoryInfo_v2(Pointer device, Pointer memory);

  /** {@code nvmlDeviceGetMemoryInfo(device, nvmlMemory_t *)}, for drivers that reject the v2 struct. */
  public static native int nvmlDeviceGetMemoryInfo(Pointer device, Pointer memory);

  /** {@code nvmlDeviceGetUtilizationRates(device, nvmlUtilization_t *)}. */
  public static native int nvmlDeviceGetUtilizationRates(Pointer device, Pointer utilization);

  /** {@code nvmlDeviceGetComputeRunningProcesses_v3(device, &count, nvmlProcessInfo_t *)}. */
  public static native int nvmlDeviceGetComputeRunningProcesses_v3(Pointer device, IntByReference count, Pointer infos);

  /** {@code nvmlEventSetWait_v2(set, nvmlEventData_t *, timeoutms)}. */
  public static native int nvmlEventSetWait_v2(Pointer set, Pointer data, int timeoutMs);
}
