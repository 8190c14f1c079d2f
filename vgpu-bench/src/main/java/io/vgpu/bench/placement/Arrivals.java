package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The FGD paper's arrival sequence for one seed: the trace sorted by pod name and shuffled, then
 * inflated with clones or deflated by removals until its GPU request is {@code inflate} times the
 * cluster's GPU capacity. Pods never depart and are never retried.
 */
final class Arrivals {
  private Arrivals() {}

  /**
   * Builds the sequence.
   *
   * <p>Everything is drawn from the trace in pod-name order, so a seed gives the same sequence however
   * the file orders its rows. Inflation draws pods uniformly with replacement and appends them after the
   * shuffled list, stopping at the first draw whose per-GPU share would cross the target (so, as in the
   * paper's simulator, the last multi-GPU clone may overshoot it). Deflation removes uniformly random
   * pods until the request is at or below the target. An {@code inflate} of 0 or less keeps the trace
   * as it is.
   *
   * @param trace the pods
   * @param capacityMilli the cluster's GPU capacity in milli-GPU
   * @param inflate the target GPU request as a multiple of capacity (the paper uses 1.3)
   * @param random the seed's random source, advanced by the shuffle and the tuning
   */
  static List<TracePod> of(List<TracePod> trace, long capacityMilli, double inflate, SplittableRandom random) {
    List<TracePod> byName = new ArrayList<>(trace);
    byName.sort(Comparator.comparing(TracePod::name));
    List<TracePod> pods = new ArrayList<>(byName);
    for (int i = pods.size() - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      TracePod swap = pods.get(i);
      pods.set(i, pods.get(j));
      pods.set(j, swap);
    }
    if (inflate <= 0) {
      return pods;
    }
    long requested = 0;
    for (TracePod p : pods) {
      requested += p.totalGpuMilli();
    }
    double target = inflate * capacityMilli;
    if (requested > target) {
      while (requested > target) {
        TracePod removed = pods.remove(random.nextInt(pods.size()));
        requested -= removed.totalGpuMilli();
      }
    } else if (requested < target) {
      if (requested == 0) {
        throw new BenchInputException("the pods file requests no GPU, so it cannot be inflated to " + inflate + " x capacity");
      }
      while (true) {
        TracePod clone = byName.get(random.nextInt(byName.size()));
        if (requested + clone.gpuMilli() > target) {
          break;
        }
        requested += clone.totalGpuMilli();
        pods.add(clone);
      }
    }
    return pods;
  }
}
