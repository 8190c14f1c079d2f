package io.vgpu.bench.placement;

import io.vgpu.api.spi.NodeView;
import java.util.List;

/**
 * The simulator's cluster: every node's free CPU and memory and every GPU's free share, in primitive
 * arrays. A GPU's 1000 milli map onto both its memory ({@link #MIB_PER_MILLI} MiB per milli) and its
 * 100 compute units, so a share applies to both, as in the paper's single-dimension GPU. Sharers are
 * not limited.
 *
 * <p>Policies see a node through {@link #view}, a reusable cursor; one instance per run, one thread.
 */
final class SimCluster {
  /** MiB of GPU memory per milli-GPU: every simulated GPU has 16,000 MiB. */
  static final int MIB_PER_MILLI = 16;

  static final int GPU_MEMORY_MIB = TracePod.WHOLE_GPU * MIB_PER_MILLI;

  /** Enough sharing slots that a GPU never runs out of them before it runs out of share. */
  static final int UNLIMITED_SHARERS = TracePod.WHOLE_GPU;

  final int nodeCount;
  final String[] names;
  final String[] models;
  final long[] cpuCapacity;
  final long[] memoryCapacity;
  final long[] freeCpu;
  final long[] freeMemory;
  final int[] firstGpu;
  final int[] gpuCount;
  /** Per GPU, over all nodes: free share in milli, compute units in use, containers sharing it. */
  final int[] freeMilli;
  final int[] usedCores;
  final int[] sharers;
  final long capacityMilli;
  private long usedMilli;

  SimCluster(List<TraceNode> nodes) {
    nodeCount = nodes.size();
    names = new String[nodeCount];
    models = new String[nodeCount];
    cpuCapacity = new long[nodeCount];
    memoryCapacity = new long[nodeCount];
    freeCpu = new long[nodeCount];
    freeMemory = new long[nodeCount];
    firstGpu = new int[nodeCount];
    gpuCount = new int[nodeCount];
    int gpus = 0;
    for (int i = 0; i < nodeCount; i++) {
      TraceNode node = nodes.get(i);
      names[i] = node.name();
      models[i] = node.model();
      cpuCapacity[i] = node.cpuMilli();
      memoryCapacity[i] = node.memoryMiB();
      freeCpu[i] = node.cpuMilli();
      freeMemory[i] = node.memoryMiB();
      firstGpu[i] = gpus;
      gpuCount[i] = node.gpus();
      gpus += node.gpus();
    }
    freeMilli = new int[gpus];
    usedCores = new int[gpus];
    sharers = new int[gpus];
    java.util.Arrays.fill(freeMilli, TracePod.WHOLE_GPU);
    capacityMilli = (long) gpus * TracePod.WHOLE_GPU;
  }

  /** GPU share allocated so far, in milli-GPU. */
  long usedMilli() {
    return usedMilli;
  }

  /** Whether the pod's CPU and memory requests fit node {@code i}'s free CPU and memory. */
  boolean fitsCpuAndMemory(int i, TracePod pod) {
    return freeCpu[i] >= pod.cpuMilli() && freeMemory[i] >= pod.memoryMiB();
  }

  /** Whether the pod fits on node {@code i}: CPU, memory, GPU model and enough GPUs with room. */
  boolean fits(int i, TracePod pod) {
    if (!fitsCpuAndMemory(i, pod)) {
      return false;
    }
    int need = pod.gpus();
    if (need == 0) {
      return true;
    }
    if (gpuCount[i] < need || !pod.acceptsModel(models[i])) {
      return false;
    }
    int share = pod.gpuMilli();
    for (int g = firstGpu[i], end = g + gpuCount[i]; g < end; g++) {
      if (freeMilli[g] >= share && --need == 0) {
        return true;
      }
    }
    return false;
  }

  /** Whether GPU {@code d} of node {@code i} has room for a share. */
  boolean gpuHasRoom(int i, int d, int share) {
    return freeMilli[firstGpu[i] + d] >= share;
  }

  /** Places the pod on node {@code i}, on the given GPU positions of that node. */
  void place(int i, TracePod pod, int[] gpus) {
    freeCpu[i] -= pod.cpuMilli();
    freeMemory[i] -= pod.memoryMiB();
    int share = pod.gpuMilli();
    for (int k = 0; k < pod.gpus(); k++) {
      int g = firstGpu[i] + gpus[k];
      freeMilli[g] -= share;
      usedCores[g] += coresOf(share);
      sharers[g]++;
    }
    usedMilli += pod.totalGpuMilli();
  }

  /** The UUID of GPU {@code d} of a node, as the policies see it and as the deployed engine registers it. */
  static String uuid(String node, int d) {
    return node + "/" + d;
  }

  /** Compute units for a share: rounded down, so that they never bind before memory does. */
  static int coresOf(int milli) {
    return milli / 10;
  }

  /** A cursor that shows one node at a time to a policy. */
  View view() {
    return new View();
  }

  /** Node {@code at} as a {@link NodeView}; re-pointed with {@link #at}. */
  final class View implements NodeView {
    private int node;
    private int first;

    /** Points the view at node {@code i}. */
    View at(int i) {
      node = i;
      first = firstGpu[i];
      return this;
    }

    @Override
    public String name() {
      return names[node];
    }

    @Override
    public int deviceCount() {
      return gpuCount[node];
    }

    @Override
    public String uuid(int d) {
      return SimCluster.uuid(names[node], d);
    }

    @Override
    public int index(int d) {
      return d;
    }

    @Override
    public String type(int d) {
      return models[node];
    }

    @Override
    public int numa(int d) {
      return 0;
    }

    @Override
    public boolean schedulable(int d) {
      return true;
    }

    @Override
    public int totalMemoryMiB(int d) {
      return GPU_MEMORY_MIB;
    }

    @Override
    public int usedMemoryMiB(int d) {
      return (TracePod.WHOLE_GPU - freeMilli[first + d]) * MIB_PER_MILLI;
    }

    @Override
    public int totalCores(int d) {
      return 100;
    }

    @Override
    public int usedCores(int d) {
      return usedCores[first + d];
    }

    @Override
    public int splitCount(int d) {
      return UNLIMITED_SHARERS;
    }

    @Override
    public int sharers(int d) {
      return sharers[first + d];
    }

    @Override
    public long freeCpuMilli() {
      return freeCpu[node];
    }
  }
}
