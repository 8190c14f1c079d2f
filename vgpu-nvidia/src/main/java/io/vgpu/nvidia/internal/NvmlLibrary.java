package io.vgpu.nvidia.internal;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The NVML functions called rarely (discovery, identity, topology, event setup), by interface mapping.
 * Names are the versioned C symbols ({@code nvmlInit_v2}, not {@code nvmlInit}): {@code nvml.h}
 * renames the plain names by macro, and JNA resolves literal names, so a plain name would bind the
 * legacy ABI. Struct arguments are raw buffers read at the offsets in {@link NvmlLayout}.
 */
public interface NvmlLibrary extends Library {
  int nvmlInit_v2();

  int nvmlShutdown();

  String nvmlErrorString(int result);

  int nvmlSystemGetDriverVersion(byte[] version, int length);

  int nvmlDeviceGetCount_v2(IntByReference count);

  int nvmlDeviceGetHandleByIndex_v2(int index, PointerByReference device);

  int nvmlDeviceGetHandleByUUID(String uuid, PointerByReference device);

  int nvmlDeviceGetIndex(Pointer device, IntByReference index);

  int nvmlDeviceGetMinorNumber(Pointer device, IntByReference minorNumber);

  int nvmlDeviceGetName(Pointer device, byte[] name, int length);

  int nvmlDeviceGetUUID(Pointer device, byte[] uuid, int length);

  int nvmlDeviceGetArchitecture(Pointer device, IntByReference architecture);

  int nvmlDeviceGetCudaComputeCapability(Pointer device, IntByReference major, IntByReference minor);

  int nvmlDeviceGetPciInfo_v3(Pointer device, Pointer pciInfo);

  int nvmlDeviceGetNumaNodeId(Pointer device, IntByReference node);

  int nvmlDeviceGetAttributes_v2(Pointer device, Pointer attributes);

  int nvmlDeviceGetMigMode(Pointer device, IntByReference currentMode, IntByReference pendingMode);

  int nvmlDeviceGetTopologyCommonAncestor(Pointer device1, Pointer device2, IntByReference pathInfo);

  int nvmlDeviceGetNvLinkState(Pointer device, int link, IntByReference isActive);

  int nvmlEventSetCreate(PointerByReference set);

  int nvmlDeviceGetSupportedEventTypes(Pointer device, LongByReference eventTypes);

  int nvmlDeviceRegisterEvents(Pointer device, long eventTypes, Pointer set);

  int nvmlEventSetFree(Pointer set);
}
