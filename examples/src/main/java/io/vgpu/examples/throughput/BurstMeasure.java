package io.vgpu.examples.throughput;

import java.util.Map;

/**
 * What one measured burst cost: its wall time, the CPU of the scheduler's process and of this one (the
 * stand-ins) over it, and the extender calls kube-scheduler timed during it.
 *
 * @param seconds from the first pod's creation to the last pod's handshake done
 * @param schedulerCpuMs the scheduler process's CPU time over the burst
 * @param schedulerJitCpuMs the part of it its JIT compiler threads used
 * @param standInCpuMs this process's CPU time over the burst: the API server, kube-scheduler and kubelet stand-ins
 * @param standInJitCpuMs the part of it this process's JIT compiler threads used
 * @param filters filter call durations in milliseconds, sorted
 * @param binds bind call durations in milliseconds, sorted
 * @param successfulBinds binds the extender accepted
 * @param bindErrors binds the extender refused, by kind
 * @param filterMisses filter calls that placed no pod
 * @param inSchedulerFilterP50Ms the median of the scheduler's own filter time (its histogram, to a bucket's bound)
 * @param inSchedulerFilterP99Ms the 99th percentile of the same
 */
record BurstMeasure(
    double seconds,
    double schedulerCpuMs,
    double schedulerJitCpuMs,
    double standInCpuMs,
    double standInJitCpuMs,
    double[] filters,
    double[] binds,
    int successfulBinds,
    Map<String, Integer> bindErrors,
    int filterMisses,
    double inSchedulerFilterP50Ms,
    double inSchedulerFilterP99Ms) {}
