package io.vgpu.bench.placement;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.core.policy.TargetWorkload;
import io.vgpu.core.policy.WorkloadClass;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A trace with what every run on it shares: its typical workload (the FGD paper's target workload,
 * which is also the fragmentation measure the reports use) and its cards by GPU model.
 *
 * @param trace the trace
 * @param typical the typical pods: the original pod list counted by shape (CPU, GPU share, GPU count,
 *     GPU models; memory ignored, CPU-only pods included), the most popular shapes covering 95% of pods
 * @param cardsByModel the cluster's GPUs per model
 */
record PreparedTrace(Trace trace, TargetWorkload typical, Map<String, Long> cardsByModel) {
  /** The paper's popularity cut for typical pods. */
  static final double POPULARITY_PERCENT = 95;

  static PreparedTrace of(Trace trace) {
    Map<WorkloadClass, Long> counts = new HashMap<>();
    for (TracePod p : trace.pods()) {
      counts.merge(workloadClass(p), 1L, Long::sum);
    }
    Map<String, Long> cardsByModel = new HashMap<>();
    for (TraceNode n : trace.nodes()) {
      if (n.gpus() > 0) {
        cardsByModel.merge(n.model(), (long) n.gpus(), Long::sum);
      }
    }
    return new PreparedTrace(trace, TargetWorkload.typical(counts, POPULARITY_PERCENT), Map.copyOf(cardsByModel));
  }

  /** The class a pod belongs to in the target workload. */
  static WorkloadClass workloadClass(TracePod pod) {
    if (pod.gpus() == 0) {
      return WorkloadClass.cpuOnly(pod.cpuMilli());
    }
    return new WorkloadClass(pod.cpuMilli(), demandOf(pod), pod.gpuSpec());
  }

  /**
   * The per-GPU demand a pod makes, as the engine would resolve it: its share of a GPU as memory
   * ({@link SimCluster#MIB_PER_MILLI} MiB per milli) and compute (one unit per 10 milli, rounded down).
   * A CPU-only pod gets an empty one-card demand, which nothing reads.
   */
  static CardDemand demandOf(TracePod pod) {
    if (pod.gpus() == 0) {
      return new CardDemand(1, 0, 0, 0);
    }
    return new CardDemand(pod.gpus(), pod.gpuMilli() * SimCluster.MIB_PER_MILLI, 0, SimCluster.coresOf(pod.gpuMilli()));
  }

  List<TracePod> pods() {
    return trace.pods();
  }
}
