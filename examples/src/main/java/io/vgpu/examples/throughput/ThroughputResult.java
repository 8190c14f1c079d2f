package io.vgpu.examples.throughput;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One run of the throughput benchmark.
 *
 * @param nodes the cluster's GPU nodes (8 cards each)
 * @param pods the burst's pods
 * @param running pods already running before the scheduler started
 * @param bindsInFlight kube-scheduler's binds in flight at most
 * @param burstSeconds from the first pod's creation to the last pod's handshake done
 * @param podsPerSecond the burst's pods over {@code burstSeconds}
 * @param schedulerCpuMsPerPod the scheduler process's CPU time during the burst, per pod
 * @param schedulerJitCpuMsPerPod the part of it the scheduler's JIT compiler threads used, per pod
 * @param standInCpuMsPerPod this process's CPU time during the burst, per pod: the API server, kube-scheduler
 *     and kubelet stand-ins
 * @param standInJitCpuMsPerPod the part of it this process's JIT compiler threads used, per pod: the stand-ins
 *     compiling code their rehearsal left uncompiled (an API server and kubelets of a cluster run compiled)
 * @param filterP50Ms median filter call as kube-scheduler timed it (HTTPS and JSON included)
 * @param filterP99Ms 99th percentile of the same
 * @param bindP50Ms median bind call
 * @param bindP99Ms 99th percentile of the same
 * @param heapMiB the scheduler's Java heap after a full collection, after the burst
 * @param residentMiB the scheduler process's resident memory after the burst
 * @param enginePodsPerSecond the same burst through the engine in this JVM
 * @param audit whether every pod was placed once and no card over-committed
 * @param successfulBinds binds the extender accepted during the burst: one per pod when none was bound twice
 * @param bindRejections binds the extender refused during the burst, by kind (kube-scheduler retried them)
 * @param filterMisses filter calls during the burst that placed no pod
 * @param setupSeconds building the cluster and starting the scheduler, including its ledger rebuild
 * @param loadAverage the machine's one-minute load average before and after the burst
 * @param inSchedulerFilterP50Ms the median of the scheduler's own filter time during the burst (its
 *     {@code vgpu_filter_duration_seconds}, to a bucket's upper bound): without HTTPS, JSON and kube-scheduler's side
 * @param inSchedulerFilterP99Ms the 99th percentile of the same
 * @param steady the steady-state burst measured after the measured one, if the cluster held it
 * @param steadySkipped why there is no steady-state burst when one was asked for, else empty
 * @param standInsPodsBefore pods the stand-ins' JVM ran before this run (the rehearsal, earlier sizes): 0
 *     when they met the run's first pods cold, as no API server and kubelets of a real cluster do
 * @param schedulerJavaVersion the version of the Java the scheduler ran on, or empty when unknown
 * @param schedulerAotTrainingSeconds how long the training run of the scheduler's AOT cache took, when
 *     it started with one
 */
record ThroughputResult(
    int nodes,
    int pods,
    int running,
    int bindsInFlight,
    double burstSeconds,
    double podsPerSecond,
    double schedulerCpuMsPerPod,
    double schedulerJitCpuMsPerPod,
    double standInCpuMsPerPod,
    double standInJitCpuMsPerPod,
    double filterP50Ms,
    double filterP99Ms,
    double bindP50Ms,
    double bindP99Ms,
    double heapMiB,
    double residentMiB,
    double enginePodsPerSecond,
    PlacementAudit audit,
    int successfulBinds,
    Map<String, Integer> bindRejections,
    int filterMisses,
    double setupSeconds,
    List<Double> loadAverage,
    double inSchedulerFilterP50Ms,
    double inSchedulerFilterP99Ms,
    Optional<Steady> steady,
    String steadySkipped,
    int standInsPodsBefore,
    String schedulerJavaVersion,
    Optional<Double> schedulerAotTrainingSeconds) {

  /**
   * A burst measured after a warm-up of at least as many pods (a scheduler that has been running for a
   * while): the same measures as the first burst's, from a warm JVM, warm connections and caches.
   *
   * @param pods its pods
   * @param warmupPods the pods the scheduler placed before it (the warm-up and the measured burst)
   * @param burstSeconds from its first pod's creation to its last pod's handshake done
   * @param schedulerCpuMsPerPod the scheduler process's CPU time over it, per pod
   * @param schedulerJitCpuMsPerPod the part of it the JIT compiler threads used, per pod
   * @param standInCpuMsPerPod this process's CPU time over it, per pod
   * @param standInJitCpuMsPerPod the part of it this process's JIT compiler threads used, per pod
   * @param filterP50Ms median filter call
   * @param filterP99Ms 99th percentile filter call
   * @param bindP99Ms 99th percentile bind call
   * @param inSchedulerFilterP99Ms the 99th percentile of the scheduler's own filter time, to a bucket's bound
   * @param audit whether its pods were placed once and no card over-committed (counting every pod)
   * @param successfulBinds binds the extender accepted during it
   */
  record Steady(
      int pods,
      int warmupPods,
      double burstSeconds,
      double schedulerCpuMsPerPod,
      double schedulerJitCpuMsPerPod,
      double standInCpuMsPerPod,
      double standInJitCpuMsPerPod,
      double filterP50Ms,
      double filterP99Ms,
      double bindP99Ms,
      double inSchedulerFilterP99Ms,
      PlacementAudit audit,
      int successfulBinds) {
    /** The steady-state figures of {@code measure}, a burst of {@code audit}'s pods. */
    static Steady of(BurstMeasure measure, int warmupPods, PlacementAudit audit) {
      int pods = audit.placed() + audit.lostCount();
      return new Steady(
          pods,
          warmupPods,
          ThroughputRun.round(measure.seconds(), 3),
          ThroughputRun.round(measure.schedulerCpuMs() / pods, 3),
          ThroughputRun.round(measure.schedulerJitCpuMs() / pods, 3),
          ThroughputRun.round(measure.standInCpuMs() / pods, 3),
          ThroughputRun.round(measure.standInJitCpuMs() / pods, 3),
          ThroughputRun.round(BurstRecorder.percentile(measure.filters(), 50), 2),
          ThroughputRun.round(BurstRecorder.percentile(measure.filters(), 99), 2),
          ThroughputRun.round(BurstRecorder.percentile(measure.binds(), 99), 2),
          measure.inSchedulerFilterP99Ms(),
          audit,
          measure.successfulBinds());
    }
  }
}
