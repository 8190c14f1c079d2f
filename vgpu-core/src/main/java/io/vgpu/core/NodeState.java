package io.vgpu.core;

import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.NodeView;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One immutable snapshot of a node: its devices' capacity and usage. Every reserve or release creates
 * a new snapshot, so readers never lock and never see a half-applied change.
 *
 * <p>Per-device fields live in one {@code int[]} with a fixed stride, so the fit scan reads one
 * contiguous block per node.
 */
final class NodeState implements NodeView {
  static final int TOTAL_MEM = 0;
  static final int USED_MEM = 1;
  static final int TOTAL_CORES = 2;
  static final int USED_CORES = 3;
  static final int SPLIT = 4;
  static final int SHARERS = 5;
  static final int FLAGS = 6;
  static final int NUMA = 7;
  static final int INDEX = 8;
  static final int TYPE = 9;
  static final int STRIDE = 10;

  static final int FLAG_HEALTHY = 1;
  static final int FLAG_CORDONED = 2;
  static final int FLAG_SCHEDULABLE = 4;

  final String name;
  final int deviceCount;
  final String[] uuids;
  final String[] types;
  final String[] modes;
  /** Per-device fields, {@code STRIDE} ints per device. */
  final int[] data;
  /** HAMi's node usage score, from usage before any new placement. */
  final float usageScore;
  /**
   * The roomiest card that can take a container, copied out of {@link #data}: the schedulable card
   * with a free sharing slot whose scarcer of free memory and free compute is the largest share of
   * its capacity (-1 fields when there is none). The filter's scan tries it first, so for most nodes
   * it decides without reading the device array, which sits elsewhere in memory.
   */
  final int roomiestFreeMem;
  final int roomiestTotalMem;
  final int roomiestFreeCores;
  final int roomiestTotalCores;
  final int roomiestSharers;
  final int roomiestType;

  private NodeState(String name, String[] uuids, String[] types, String[] modes, int[] data) {
    this.name = name;
    this.deviceCount = uuids.length;
    this.uuids = uuids;
    this.types = types;
    this.modes = modes;
    this.data = data;
    this.usageScore = HamiPolicy.usageScore(this); // reads only data and deviceCount, both set above
    int roomiest = roomiestCard(data, uuids.length);
    int base = roomiest * STRIDE;
    this.roomiestFreeMem = roomiest < 0 ? -1 : data[base + TOTAL_MEM] - data[base + USED_MEM];
    this.roomiestTotalMem = roomiest < 0 ? -1 : data[base + TOTAL_MEM];
    this.roomiestFreeCores = roomiest < 0 ? -1 : data[base + TOTAL_CORES] - data[base + USED_CORES];
    this.roomiestTotalCores = roomiest < 0 ? -1 : data[base + TOTAL_CORES];
    this.roomiestSharers = roomiest < 0 ? -1 : data[base + SHARERS];
    this.roomiestType = roomiest < 0 ? -1 : data[base + TYPE];
  }

  /** The position of the roomiest card that can take a container (see {@link #roomiestFreeMem}), or -1. */
  private static int roomiestCard(int[] data, int n) {
    int best = -1;
    double bestShare = -1;
    for (int d = 0; d < n; d++) {
      int base = d * STRIDE;
      if ((data[base + FLAGS] & FLAG_SCHEDULABLE) == 0 || data[base + SPLIT] <= data[base + SHARERS]) {
        continue;
      }
      int totalMem = data[base + TOTAL_MEM];
      int totalCores = data[base + TOTAL_CORES];
      double mem = totalMem == 0 ? 0 : (double) (totalMem - data[base + USED_MEM]) / totalMem;
      double cores = totalCores == 0 ? 1 : (double) (totalCores - data[base + USED_CORES]) / totalCores;
      double share = Math.min(mem, cores);
      if (share > bestShare) {
        best = d;
        bestShare = share;
      }
    }
    return best;
  }

  /** A node with the given devices and no usage. */
  static NodeState of(NodeDevices node) {
    return of(node, Map.of());
  }

  /** A node with the given devices, each using what {@code usageByUuid} says (memory, cores, slots). */
  static NodeState of(NodeDevices node, Map<String, int[]> usageByUuid) {
    List<SchedulableDevice> devices = node.devices();
    int n = devices.size();
    String[] uuids = new String[n];
    String[] types = new String[n];
    String[] modes = new String[n];
    int[] data = new int[n * STRIDE];
    Set<String> cordoned = node.cordoned();
    for (int d = 0; d < n; d++) {
      SchedulableDevice dev = devices.get(d);
      uuids[d] = dev.uuid();
      types[d] = dev.type();
      modes[d] = dev.mode();
      int base = d * STRIDE;
      data[base + TOTAL_MEM] = dev.memoryMiB();
      data[base + TOTAL_CORES] = dev.cores();
      data[base + SPLIT] = dev.splitCount();
      boolean isCordoned = cordoned.contains(dev.uuid());
      data[base + FLAGS] =
          (dev.healthy() ? FLAG_HEALTHY : 0)
              | (isCordoned ? FLAG_CORDONED : 0)
              | (dev.healthy() && !isCordoned ? FLAG_SCHEDULABLE : 0);
      data[base + NUMA] = dev.numa();
      data[base + INDEX] = dev.index();
      data[base + TYPE] = DeviceTypes.idOf(dev.type(), dev.mode());
      int[] usage = usageByUuid.get(dev.uuid());
      if (usage != null) {
        data[base + USED_MEM] = usage[0];
        data[base + USED_CORES] = usage[1];
        data[base + SHARERS] = usage[2];
      }
    }
    return new NodeState(node.name(), uuids, types, modes, data);
  }

  /**
   * This node's devices re-registered with new capacity. Devices that stay keep their usage; a device
   * new to the node takes its usage from {@code usageOfNewDevices} (by UUID).
   */
  NodeState reregistered(NodeDevices node, Map<String, int[]> usageOfNewDevices) {
    NodeState fresh = of(node, usageOfNewDevices);
    int[] data = fresh.data;
    for (int d = 0; d < fresh.deviceCount; d++) {
      int old = positionOf(fresh.uuids[d]);
      if (old >= 0) {
        int base = d * STRIDE;
        int oldBase = old * STRIDE;
        data[base + USED_MEM] = this.data[oldBase + USED_MEM];
        data[base + USED_CORES] = this.data[oldBase + USED_CORES];
        data[base + SHARERS] = this.data[oldBase + SHARERS];
      }
    }
    return new NodeState(fresh.name, fresh.uuids, fresh.types, fresh.modes, data);
  }

  /** A copy with usage changed by {@code sign} times the given per-position deltas. */
  NodeState withUsage(int[] positions, int[] memory, int[] cores, int[] slots, int count, int sign) {
    int[] copy = Arrays.copyOf(data, data.length);
    for (int i = 0; i < count; i++) {
      int base = positions[i] * STRIDE;
      copy[base + USED_MEM] += sign * memory[i];
      copy[base + USED_CORES] += sign * cores[i];
      copy[base + SHARERS] += sign * slots[i];
    }
    return new NodeState(name, uuids, types, modes, copy);
  }

  /** The position of the device with this UUID, or -1. */
  int positionOf(String uuid) {
    for (int d = 0; d < deviceCount; d++) {
      if (uuids[d].equals(uuid)) {
        return d;
      }
    }
    return -1;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public int deviceCount() {
    return deviceCount;
  }

  @Override
  public String uuid(int d) {
    return uuids[d];
  }

  @Override
  public int index(int d) {
    return data[d * STRIDE + INDEX];
  }

  @Override
  public String type(int d) {
    return types[d];
  }

  @Override
  public int numa(int d) {
    return data[d * STRIDE + NUMA];
  }

  @Override
  public boolean schedulable(int d) {
    return (data[d * STRIDE + FLAGS] & FLAG_SCHEDULABLE) != 0;
  }

  boolean healthy(int d) {
    return (data[d * STRIDE + FLAGS] & FLAG_HEALTHY) != 0;
  }

  boolean cordoned(int d) {
    return (data[d * STRIDE + FLAGS] & FLAG_CORDONED) != 0;
  }

  int typeId(int d) {
    return data[d * STRIDE + TYPE];
  }

  @Override
  public int totalMemoryMiB(int d) {
    return data[d * STRIDE + TOTAL_MEM];
  }

  @Override
  public int usedMemoryMiB(int d) {
    return data[d * STRIDE + USED_MEM];
  }

  @Override
  public int totalCores(int d) {
    return data[d * STRIDE + TOTAL_CORES];
  }

  @Override
  public int usedCores(int d) {
    return data[d * STRIDE + USED_CORES];
  }

  @Override
  public int splitCount(int d) {
    return data[d * STRIDE + SPLIT];
  }

  @Override
  public int sharers(int d) {
    return data[d * STRIDE + SHARERS];
  }
}
