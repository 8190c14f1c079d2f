package io.vgpu.core;

import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.NodeView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * One immutable snapshot of a node: its devices' capacity and usage, and the grants that usage is the
 * sum of. Every reserve, restore, release or registration creates a new snapshot and swaps it in with
 * compare-and-set, so readers never lock and never see a half-applied change, and a grant is counted
 * in a node's usage exactly when it is in that snapshot's {@link #held} list: the two cannot drift
 * apart, whatever order threads run in.
 *
 * <p>A node that is not registered (never yet, or removed) still has a snapshot while grants on it are
 * held: no devices, only the grants, which count once it registers.
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

  private static final String[] NO_STRINGS = new String[0];
  private static final int[] NO_DATA = new int[0];
  private static final PodUsage[] NO_GRANTS = new PodUsage[0];

  /**
   * Marks a node's ledger entry as discarded (not registered, no grant held): whoever finds it takes
   * a fresh entry instead, so nothing is ever added to an entry that has left the engine's map.
   */
  static final NodeState RETIRED = new NodeState("", false, NO_STRINGS, NO_STRINGS, NO_STRINGS, NO_DATA, NO_GRANTS);

  final String name;
  /** Whether the node is registered; an unregistered snapshot has no devices and only holds grants. */
  final boolean registered;
  final int deviceCount;
  final String[] uuids;
  final String[] types;
  final String[] modes;
  /** Per-device fields, {@code STRIDE} ints per device. */
  final int[] data;
  /** The grants on this node, each counted once in {@link #data}'s usage (on the devices it knows). */
  final PodUsage[] held;
  /** HAMi's node usage score, from usage before any new placement. */
  final float usageScore;
  /**
   * The roomiest card that can take a container, copied out of {@link #data}: the schedulable card
   * with a free sharing slot whose scarcer of free memory and free compute is the largest share of
   * its capacity ({@code roomiest} is -1 when there is none). The filter's scan tries it first, so for
   * most nodes it decides without reading the device array, which sits elsewhere in memory.
   */
  final int roomiest;
  final int roomiestFlags;
  final int roomiestType;
  final int roomiestSplit;
  final int roomiestSharers;
  final int roomiestTotalMem;
  final int roomiestUsedMem;
  final int roomiestTotalCores;
  final int roomiestUsedCores;

  private NodeState(String name, boolean registered, String[] uuids, String[] types, String[] modes, int[] data, PodUsage[] held) {
    this.name = name;
    this.registered = registered;
    this.deviceCount = uuids.length;
    this.uuids = uuids;
    this.types = types;
    this.modes = modes;
    this.data = data;
    this.held = held;
    this.usageScore = HamiPolicy.usageScore(this); // reads only data and deviceCount, both set above
    int r = roomiestCard(data, uuids.length);
    int base = Math.max(r, 0) * STRIDE;
    this.roomiest = r;
    this.roomiestFlags = r < 0 ? 0 : data[base + FLAGS];
    this.roomiestType = r < 0 ? 0 : data[base + TYPE];
    this.roomiestSplit = r < 0 ? 0 : data[base + SPLIT];
    this.roomiestSharers = r < 0 ? 0 : data[base + SHARERS];
    this.roomiestTotalMem = r < 0 ? 0 : data[base + TOTAL_MEM];
    this.roomiestUsedMem = r < 0 ? 0 : data[base + USED_MEM];
    this.roomiestTotalCores = r < 0 ? 0 : data[base + TOTAL_CORES];
    this.roomiestUsedCores = r < 0 ? 0 : data[base + USED_CORES];
  }

  /** The position of the roomiest card that can take a container (see {@link #roomiest}), or -1. */
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

  /** A node with the given devices and no grant. */
  static NodeState of(NodeDevices node) {
    return ofDevices(node, NO_GRANTS);
  }

  /** A node that is not registered and holds no grant: where a ledger entry starts. */
  static NodeState unregistered(String name) {
    return new NodeState(name, false, NO_STRINGS, NO_STRINGS, NO_STRINGS, NO_DATA, NO_GRANTS);
  }

  /** The node registered with these devices, its usage the sum of {@code held} on the devices named. */
  private static NodeState ofDevices(NodeDevices node, PodUsage[] held) {
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
    }
    for (PodUsage grant : held) {
      addUsage(data, uuids, grant, 1);
    }
    return new NodeState(node.name(), true, uuids, types, modes, data, held);
  }

  /**
   * This node (re-)registered with the given devices: capacity, health and cordons from {@code node},
   * usage the sum of the grants it holds, so a device new to the node gets its grants' usage back.
   */
  NodeState registeredAs(NodeDevices node) {
    return ofDevices(node, held);
  }

  /** This node removed: no devices, its grants still held, to count again if it comes back. */
  NodeState withdrawn() {
    return new NodeState(name, false, NO_STRINGS, NO_STRINGS, NO_STRINGS, NO_DATA, held);
  }

  /** A copy that holds one more grant and counts its usage on the devices this node has. */
  NodeState plus(PodUsage grant) {
    int[] copy = Arrays.copyOf(data, data.length);
    addUsage(copy, uuids, grant, 1);
    PodUsage[] more = Arrays.copyOf(held, held.length + 1);
    more[held.length] = grant;
    return new NodeState(name, registered, uuids, types, modes, copy, more);
  }

  /** A copy without this grant (the very object) and its usage; this snapshot if it does not hold it. */
  NodeState minus(PodUsage grant) {
    int at = -1;
    for (int i = 0; i < held.length; i++) {
      if (held[i] == grant) {
        at = i;
        break;
      }
    }
    if (at < 0) {
      return this;
    }
    int[] copy = Arrays.copyOf(data, data.length);
    addUsage(copy, uuids, grant, -1);
    PodUsage[] fewer = new PodUsage[held.length - 1];
    System.arraycopy(held, 0, fewer, 0, at);
    System.arraycopy(held, at + 1, fewer, at, held.length - at - 1);
    return new NodeState(name, registered, uuids, types, modes, copy, fewer);
  }

  private static void addUsage(int[] data, String[] uuids, PodUsage grant, int sign) {
    for (int i = 0; i < grant.uuids.length; i++) {
      int d = positionOf(uuids, grant.uuids[i]);
      if (d >= 0) {
        int base = d * STRIDE;
        data[base + USED_MEM] += sign * grant.memory[i];
        data[base + USED_CORES] += sign * grant.cores[i];
        data[base + SHARERS] += sign * grant.slots[i];
      }
    }
  }

  /** Whether the node is unregistered and holds nothing, so its ledger entry may be discarded. */
  boolean idle() {
    return !registered && held.length == 0;
  }

  /** Pods holding a grant on the device with this UUID, ordered by pod. */
  List<PodRef> holders(String uuid) {
    List<PodRef> out = new ArrayList<>();
    for (PodUsage grant : held) {
      if (grant.of(uuid) != null) {
        out.add(grant.grant.pod());
      }
    }
    out.sort(null);
    return out;
  }

  /** The position of the device with this UUID, or -1. */
  int positionOf(String uuid) {
    return positionOf(uuids, uuid);
  }

  private static int positionOf(String[] uuids, String uuid) {
    for (int d = 0; d < uuids.length; d++) {
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

  int flags(int d) {
    return data[d * STRIDE + FLAGS];
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
