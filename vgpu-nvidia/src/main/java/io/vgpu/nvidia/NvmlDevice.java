package io.vgpu.nvidia;

import static io.vgpu.nvidia.internal.NvmlLayout.*;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import io.vgpu.nvidia.internal.NvmlHotCalls;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * One GPU as NVML sees it ({@code nvmlDevice_t}). Every query asks the driver afresh and throws an
 * {@link NvmlException} when NVML fails; a GPU that fell off the bus answers identity queries (UUID,
 * name, PCI, index) but fails state queries with {@link NvmlError#GPU_IS_LOST}. Memory, utilization
 * and process queries are direct-mapped (cheap enough for every scrape).
 */
public final class NvmlDevice {
  /** Process entries the first process-list call makes room for. */
  static final int PROCESS_BUFFER = 64;

  private final NvmlCalls calls;
  private final Pointer handle;
  private final String label;

  NvmlDevice(NvmlCalls calls, Pointer handle, String label) {
    this.calls = calls;
    this.handle = handle;
    this.label = label;
  }

  Pointer handle() {
    return handle;
  }

  /** The GPU's UUID, e.g. {@code GPU-12345678-1234-1234-1234-123456780000}. */
  public String uuid() {
    byte[] buffer = new byte[UUID_BUFFER];
    calls.call("nvmlDeviceGetUUID", label, () -> calls.api().nvmlDeviceGetUUID(handle, buffer, buffer.length));
    return Native.toString(buffer);
  }

  /** The product name, e.g. {@code NVIDIA A100-SXM4-40GB} or {@code Tesla T4}. */
  public String name() {
    byte[] buffer = new byte[NAME_BUFFER];
    calls.call("nvmlDeviceGetName", label, () -> calls.api().nvmlDeviceGetName(handle, buffer, buffer.length));
    return Native.toString(buffer);
  }

  /** NVML's index of the GPU: its physical position on the node, also in a container that sees fewer GPUs. */
  public int index() {
    IntByReference value = new IntByReference();
    calls.call("nvmlDeviceGetIndex", label, () -> calls.api().nvmlDeviceGetIndex(handle, value));
    return value.getValue();
  }

  /** The minor number of the GPU's device node: {@code /dev/nvidia<minor>}. */
  public int minorNumber() {
    IntByReference value = new IntByReference();
    calls.call("nvmlDeviceGetMinorNumber", label, () -> calls.api().nvmlDeviceGetMinorNumber(handle, value));
    return value.getValue();
  }

  /** The architecture family in lower case ({@code volta}, {@code ampere}, {@code hopper}, ...), or {@code unknown}. */
  public String architecture() {
    IntByReference value = new IntByReference();
    calls.call("nvmlDeviceGetArchitecture", label, () -> calls.api().nvmlDeviceGetArchitecture(handle, value));
    return switch (value.getValue()) {
      case 2 -> "kepler";
      case 3 -> "maxwell";
      case 4 -> "pascal";
      case 5 -> "volta";
      case 6 -> "turing";
      case 7 -> "ampere";
      case 8 -> "ada";
      case 9 -> "hopper";
      case 10 -> "blackwell";
      default -> "unknown";
    };
  }

  /** The CUDA compute capability. */
  public ComputeCapability computeCapability() {
    IntByReference major = new IntByReference();
    IntByReference minor = new IntByReference();
    calls.call("nvmlDeviceGetCudaComputeCapability", label, () -> calls.api().nvmlDeviceGetCudaComputeCapability(handle, major, minor));
    return new ComputeCapability(major.getValue(), minor.getValue());
  }

  /**
   * The memory of the GPU ({@code nvmlDeviceGetMemoryInfo_v2}, or the v1 call where a driver rejects
   * the v2 struct). Unified-memory parts fail with {@link NvmlError#NOT_SUPPORTED}.
   */
  public MemoryInfo memory() {
    Memory buffer = new Memory(MEMORY_V2_SIZE);
    buffer.clear();
    buffer.setInt(0, MEMORY_V2_VERSION);
    int code = NvmlHotCalls.nvmlDeviceGetMemoryInfo_v2(handle, buffer);
    if (code == NvmlError.ARGUMENT_VERSION_MISMATCH.code() || code == NvmlError.FUNCTION_NOT_FOUND.code()) {
      buffer.clear();
      calls.check("nvmlDeviceGetMemoryInfo", label, NvmlHotCalls.nvmlDeviceGetMemoryInfo(handle, buffer));
      return new MemoryInfo(buffer.getLong(MEMORY_V1_TOTAL), 0, buffer.getLong(MEMORY_V1_FREE), buffer.getLong(MEMORY_V1_USED));
    }
    calls.check("nvmlDeviceGetMemoryInfo_v2", label, code);
    return new MemoryInfo(
        buffer.getLong(MEMORY_V2_TOTAL), buffer.getLong(MEMORY_V2_RESERVED), buffer.getLong(MEMORY_V2_FREE), buffer.getLong(MEMORY_V2_USED));
  }

  /** PCI identity ({@code nvmlDeviceGetPciInfo_v3}). */
  public PciInfo pciInfo() {
    Memory buffer = new Memory(PCI_SIZE);
    buffer.clear();
    calls.call("nvmlDeviceGetPciInfo_v3", label, () -> calls.api().nvmlDeviceGetPciInfo_v3(handle, buffer));
    return new PciInfo(
        buffer.getString(PCI_BUS_ID),
        buffer.getInt(PCI_DOMAIN),
        buffer.getInt(PCI_BUS),
        buffer.getInt(PCI_DEVICE),
        Integer.toUnsignedLong(buffer.getInt(PCI_DEVICE_ID)),
        Integer.toUnsignedLong(buffer.getInt(PCI_SUBSYSTEM_ID)));
  }

  /**
   * NVML's NUMA node of the GPU, or empty where NVML does not report one ({@link
   * NvmlError#NOT_SUPPORTED}, or a driver without {@code nvmlDeviceGetNumaNodeId}).
   */
  public OptionalInt numaNode() {
    IntByReference value = new IntByReference();
    int code = calls.invoke(() -> calls.api().nvmlDeviceGetNumaNodeId(handle, value));
    if (code == NvmlError.NOT_SUPPORTED.code() || code == NvmlError.FUNCTION_NOT_FOUND.code()) {
      return OptionalInt.empty();
    }
    calls.check("nvmlDeviceGetNumaNodeId", label, code);
    return OptionalInt.of(value.getValue());
  }

  /** Engine counts and memory size ({@code nvmlDeviceGetAttributes_v2}); drivers answer it for MIG devices at least. */
  public Attributes attributes() {
    Memory buffer = new Memory(ATTRIBUTES_SIZE);
    buffer.clear();
    calls.call("nvmlDeviceGetAttributes_v2", label, () -> calls.api().nvmlDeviceGetAttributes_v2(handle, buffer));
    return new Attributes(buffer.getInt(ATTRIBUTES_MULTIPROCESSORS), buffer.getLong(ATTRIBUTES_MEMORY_MB));
  }

  /** The MIG mode, or empty for a GPU without MIG ({@link NvmlError#NOT_SUPPORTED}). */
  public Optional<MigMode> migMode() {
    IntByReference current = new IntByReference();
    IntByReference pending = new IntByReference();
    int code = calls.invoke(() -> calls.api().nvmlDeviceGetMigMode(handle, current, pending));
    if (code == NvmlError.NOT_SUPPORTED.code()) {
      return Optional.empty();
    }
    calls.check("nvmlDeviceGetMigMode", label, code);
    return Optional.of(new MigMode(current.getValue() == 1, pending.getValue() == 1));
  }

  /** How close two GPUs are on the PCI tree ({@code nvmlDeviceGetTopologyCommonAncestor}). */
  public TopologyLevel commonAncestor(NvmlDevice other) {
    IntByReference level = new IntByReference();
    calls.call("nvmlDeviceGetTopologyCommonAncestor", label + " and " + other.label, () -> calls.api().nvmlDeviceGetTopologyCommonAncestor(handle, other.handle, level));
    return TopologyLevel.of(level.getValue());
  }

  /** Whether NVLink {@code link} is active. */
  public boolean nvLinkActive(int link) {
    IntByReference active = new IntByReference();
    calls.call("nvmlDeviceGetNvLinkState", label + " link " + link, () -> calls.api().nvmlDeviceGetNvLinkState(handle, link, active));
    return active.getValue() == 1;
  }

  /** The number of active NVLink links: 0 on a GPU without NVLink. */
  public int activeNvLinks() {
    int active = 0;
    for (int link = 0; link < NVLINK_MAX_LINKS; link++) {
      IntByReference state = new IntByReference();
      int l = link;
      int code = calls.invoke(() -> calls.api().nvmlDeviceGetNvLinkState(handle, l, state));
      if (code == NvmlError.INVALID_ARGUMENT.code() || code == NvmlError.NOT_SUPPORTED.code()) {
        break; // past the last link, or no NVLink at all
      }
      calls.check("nvmlDeviceGetNvLinkState", label + " link " + link, code);
      active += state.getValue() == 1 ? 1 : 0;
    }
    return active;
  }

  /**
   * The processes with a compute context on the GPU ({@code nvmlDeviceGetComputeRunningProcesses_v3}).
   * One driver call while they fit a buffer of {@value #PROCESS_BUFFER} entries (a node's worth: the node
   * watchdog lists every GPU every second); more are read with a buffer sized to the count NVML reports.
   */
  public List<ProcessInfo> computeProcesses() {
    return computeProcesses(PROCESS_BUFFER);
  }

  /** {@link #computeProcesses()} with room for {@code firstCapacity} entries in the first call. */
  List<ProcessInfo> computeProcesses(int firstCapacity) {
    int capacity = Math.max(1, firstCapacity);
    while (true) {
      Memory buffer = new Memory((long) capacity * PROCESS_SIZE);
      IntByReference count = new IntByReference(capacity);
      int code = NvmlHotCalls.nvmlDeviceGetComputeRunningProcesses_v3(handle, count, buffer);
      if (code == 0) {
        List<ProcessInfo> out = new ArrayList<>(count.getValue());
        for (int i = 0; i < count.getValue(); i++) {
          long at = (long) i * PROCESS_SIZE;
          out.add(new ProcessInfo(
              buffer.getInt(at),
              buffer.getLong(at + PROCESS_USED_MEMORY),
              buffer.getInt(at + PROCESS_GPU_INSTANCE),
              buffer.getInt(at + PROCESS_COMPUTE_INSTANCE)));
        }
        return out;
      }
      if (code != NvmlError.INSUFFICIENT_SIZE.code()) {
        calls.check("nvmlDeviceGetComputeRunningProcesses_v3", label, code);
        return List.of();
      }
      // Processes may start between NVML's count and the next read: leave room for them.
      capacity = Math.max(count.getValue(), capacity) + PROCESS_BUFFER;
    }
  }

  /** Busy percentages over the driver's last sample period ({@code nvmlDeviceGetUtilizationRates}). */
  public Utilization utilization() {
    Memory buffer = new Memory(UTILIZATION_SIZE);
    calls.check("nvmlDeviceGetUtilizationRates", label, NvmlHotCalls.nvmlDeviceGetUtilizationRates(handle, buffer));
    return new Utilization(buffer.getInt(0), buffer.getInt(4));
  }

  /** Two devices are equal when they are the same NVML handle. */
  @Override
  public boolean equals(Object other) {
    return other instanceof NvmlDevice d && d.handle.equals(handle);
  }

  @Override
  public int hashCode() {
    return handle.hashCode();
  }

  /** The label used in error messages, e.g. {@code GPU 0}. */
  @Override
  public String toString() {
    return label;
  }

  /**
   * Device memory in bytes.
   *
   * @param total total memory
   * @param reserved memory the driver reserves (0 from the v1 call)
   * @param free free memory
   * @param used used memory (without {@code reserved} in v2)
   */
  public record MemoryInfo(long total, long reserved, long free, long used) {
    /** The total in whole MiB, as HAMi registers it. */
    public long totalMiB() {
      return total >>> 20;
    }
  }

  /**
   * PCI identity.
   *
   * @param busId the bus id with an 8-digit domain, e.g. {@code 00000000:07:00.0}
   * @param domain the PCI domain
   * @param bus the bus number
   * @param device the device number
   * @param pciDeviceId device id and vendor id combined, e.g. {@code 0x20B010DE}
   * @param pciSubSystemId the subsystem id
   */
  public record PciInfo(String busId, int domain, int bus, int device, long pciDeviceId, long pciSubSystemId) {}

  /**
   * A CUDA compute capability.
   *
   * @param major e.g. 8 for Ampere
   * @param minor e.g. 0 for the A100
   */
  public record ComputeCapability(int major, int minor) {
    /** {@code major.minor}, e.g. {@code 8.0}. */
    @Override
    public String toString() {
      return major + "." + minor;
    }
  }

  /**
   * What {@code nvmlDeviceGetAttributes_v2} reports.
   *
   * @param multiprocessorCount streaming multiprocessors
   * @param memoryMiB memory in MiB
   */
  public record Attributes(int multiprocessorCount, long memoryMiB) {}

  /**
   * The MIG mode.
   *
   * @param enabled whether MIG is on now
   * @param pendingEnabled whether MIG is on after the next GPU reset
   */
  public record MigMode(boolean enabled, boolean pendingEnabled) {}

  /**
   * A process with a compute context on the GPU.
   *
   * @param pid the process id as the host sees it
   * @param usedGpuMemory its device memory in bytes
   * @param gpuInstanceId its MIG GPU instance, or {@code 0xFFFFFFFF} without MIG
   * @param computeInstanceId its MIG compute instance, or {@code 0xFFFFFFFF} without MIG
   */
  public record ProcessInfo(int pid, long usedGpuMemory, int gpuInstanceId, int computeInstanceId) {}

  /**
   * Busy percentages.
   *
   * @param gpu percent of the sample period a kernel ran
   * @param memory percent of the sample period device memory was read or written
   */
  public record Utilization(int gpu, int memory) {}

  /** NVML's {@code nvmlGpuTopologyLevel_t}: the closest common ancestor of two GPUs, closest first. */
  public enum TopologyLevel {
    /** The same GPU (or two GPUs on one board). */
    INTERNAL(0),
    /** Behind one PCIe switch. */
    SINGLE(10),
    /** Behind several PCIe switches, without the host bridge. */
    MULTIPLE(20),
    /** Behind the same host bridge. */
    HOSTBRIDGE(30),
    /** On the same NUMA node, across host bridges. */
    NODE(40),
    /** Across NUMA nodes (SMP interconnect). */
    SYSTEM(50);

    private final int value;

    TopologyLevel(int value) {
      this.value = value;
    }

    /** NVML's numeric value. */
    public int value() {
      return value;
    }

    static TopologyLevel of(int value) {
      for (TopologyLevel level : values()) {
        if (level.value == value) {
          return level;
        }
      }
      return SYSTEM; // an unknown level is at least as far apart as the farthest known one
    }
  }
}
