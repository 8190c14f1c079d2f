package io.vgpu.bench.placement;

import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * One policy's results on one trace: every seed's, and their median and mean.
 *
 * @param policy the policy's name
 * @param trace the workload's name
 * @param seeds the per-seed results, in seed order
 */
public record PolicyReport(String policy, String trace, List<SeedResult> seeds) {

  /** Copies the list. */
  public PolicyReport {
    seeds = List.copyOf(seeds);
  }

  /** The median over seeds of a per-seed value (NaN values are left out). */
  public double median(ToDoubleFunction<SeedResult> metric) {
    double[] values = values(metric);
    if (values.length == 0) {
      return Double.NaN;
    }
    int mid = values.length / 2;
    return values.length % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  }

  /** The mean over seeds of a per-seed value (NaN values are left out). */
  public double mean(ToDoubleFunction<SeedResult> metric) {
    double[] values = values(metric);
    return values.length == 0 ? Double.NaN : Arrays.stream(values).sum() / values.length;
  }

  private double[] values(ToDoubleFunction<SeedResult> metric) {
    return seeds.stream().mapToDouble(metric).filter(v -> !Double.isNaN(v)).sorted().toArray();
  }
}
