package io.vgpu.examples.throughput;

import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerStandIn;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What kube-scheduler and the kubelet saw of a burst: the duration of every extender call, the binds the
 * extender refused, and which pods were allocated (their handshake done) or refused by the kubelet.
 */
final class BurstRecorder implements KubeSchedulerStandIn.ExtenderTimings {
  private final List<Long> filters = new ArrayList<>();
  private final List<Long> binds = new ArrayList<>();
  private final Map<String, Integer> bindErrors = new LinkedHashMap<>();
  private int filterMisses;
  private int successfulBinds;
  private final Set<PodRef> allocated = ConcurrentHashMap.newKeySet();
  private final Map<PodRef, String> refused = new ConcurrentHashMap<>();

  @Override
  public synchronized void filtered(PodRef pod, long nanos, boolean placed) {
    filters.add(nanos);
    if (!placed) {
      filterMisses++;
    }
  }

  @Override
  public synchronized void bound(PodRef pod, String node, long nanos, String error) {
    binds.add(nanos);
    if (error.isEmpty()) {
      successfulBinds++;
    } else {
      // One kind per message shape: node names and times vary, the reason does not.
      String kind = error.replaceAll("node \\S+", "node N").replaceAll("\\d+", "#");
      bindErrors.merge(kind, 1, Integer::sum);
    }
  }

  /** The kubelet allocated the pod (error empty) or refused it. */
  void allocated(PodRef pod, String error) {
    if (error.isEmpty()) {
      allocated.add(pod);
      refused.remove(pod);
    } else {
      refused.put(pod, error);
    }
  }

  /** Forgets the calls so far (after the warm-up); allocations stay. */
  synchronized void resetTimings() {
    filters.clear();
    binds.clear();
    bindErrors.clear();
    filterMisses = 0;
    successfulBinds = 0;
  }

  /** How many of {@code pods} the kubelet allocated. */
  int allocatedOf(Set<PodRef> pods) {
    int n = 0;
    for (PodRef p : pods) {
      if (allocated.contains(p)) {
        n++;
      }
    }
    return n;
  }

  /** The kubelet's refusals, by pod. */
  Map<PodRef, String> refused() {
    return Map.copyOf(refused);
  }

  /** Filter durations in milliseconds, sorted. */
  synchronized double[] filterMillis() {
    return sortedMillis(filters);
  }

  /** Bind durations in milliseconds, sorted. */
  synchronized double[] bindMillis() {
    return sortedMillis(binds);
  }

  /** Filter calls that placed no pod (no node fits, or an error). */
  synchronized int filterMisses() {
    return filterMisses;
  }

  /** Binds the extender accepted (kube-scheduler binds a pod once, so one per pod placed). */
  synchronized int successfulBinds() {
    return successfulBinds;
  }

  /** Binds the extender refused, by kind of error. */
  synchronized Map<String, Integer> bindErrors() {
    return new LinkedHashMap<>(bindErrors);
  }

  private static double[] sortedMillis(List<Long> nanos) {
    double[] out = new double[nanos.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = nanos.get(i) / 1e6;
    }
    Arrays.sort(out);
    return out;
  }

  /** The nearest-rank percentile of sorted values; 0 when there are none. */
  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(p / 100.0 * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }
}
