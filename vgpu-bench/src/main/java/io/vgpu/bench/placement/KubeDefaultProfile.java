package io.vgpu.bench.placement;

/**
 * What kube-scheduler's default profile does on its own, as the as-deployed run needs it: before it
 * calls the extender, NodeResourcesFit's filter (the pod's CPU and memory requests within what the
 * node has left); and for a pod no extender handles (one that asks for no GPU resource), its two
 * resource scores on CPU and memory, each 0..100 in kube-scheduler's integer arithmetic and summed
 * with their default weight of 1: NodeResourcesFit with the LeastAllocated strategy and
 * NodeResourcesBalancedAllocation. The profile's other scores (image locality, node and pod affinity,
 * taints, topology spread) are the same on every node for the trace's bare pods. Not modelled: the
 * per-node pod limit, and the 100m/200MiB that LeastAllocated assumes for a request of 0.
 */
final class KubeDefaultProfile {
  private static final long MAX_NODE_SCORE = 100;
  private static final long BYTES_PER_MIB = 1L << 20;

  private KubeDefaultProfile() {}

  /** Whether NodeResourcesFit lets the pod onto node {@code i}. */
  static boolean feasible(SimCluster cluster, int i, TracePod pod) {
    return cluster.fitsCpuAndMemory(i, pod);
  }

  /** The default profile's resource score for the pod on node {@code i}: 0..200, higher is better. */
  static long score(SimCluster cluster, int i, TracePod pod) {
    long cpuAllocatable = cluster.cpuCapacity[i];
    long memoryAllocatable = cluster.memoryCapacity[i] * BYTES_PER_MIB;
    long cpuRequested = cluster.cpuCapacity[i] - cluster.freeCpu[i] + pod.cpuMilli();
    long memoryRequested = (cluster.memoryCapacity[i] - cluster.freeMemory[i] + pod.memoryMiB()) * BYTES_PER_MIB;
    return leastAllocated(cpuRequested, cpuAllocatable, memoryRequested, memoryAllocatable)
        + balancedAllocation(cpuRequested, cpuAllocatable, memoryRequested, memoryAllocatable);
  }

  /** NodeResourcesFit's LeastAllocated score: the mean free share of each resource, in whole points. */
  static long leastAllocated(long cpuRequested, long cpuAllocatable, long memoryRequested, long memoryAllocatable) {
    long score = 0;
    long weights = 0;
    if (cpuAllocatable > 0) {
      score += leastRequested(cpuRequested, cpuAllocatable);
      weights++;
    }
    if (memoryAllocatable > 0) {
      score += leastRequested(memoryRequested, memoryAllocatable);
      weights++;
    }
    return weights == 0 ? 0 : score / weights;
  }

  private static long leastRequested(long requested, long capacity) {
    return requested > capacity ? 0 : (capacity - requested) * MAX_NODE_SCORE / capacity;
  }

  /** NodeResourcesBalancedAllocation's score: 100 times one minus the spread of the used shares. */
  static long balancedAllocation(long cpuRequested, long cpuAllocatable, long memoryRequested, long memoryAllocatable) {
    if (cpuAllocatable <= 0 || memoryAllocatable <= 0) {
      return MAX_NODE_SCORE;
    }
    double cpu = Math.min(1, (double) cpuRequested / cpuAllocatable);
    double memory = Math.min(1, (double) memoryRequested / memoryAllocatable);
    double deviation = Math.abs((cpu - memory) / 2);
    return (long) ((1 - deviation) * MAX_NODE_SCORE);
  }
}
