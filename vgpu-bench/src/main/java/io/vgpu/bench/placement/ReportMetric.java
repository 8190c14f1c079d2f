package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The per-seed values a report shows, by their JSON names, in output order. The curve's points are
 * metrics too, named by their arrived percentage.
 *
 * @param name the JSON key
 * @param value how to read it from a seed's result
 */
record ReportMetric(String name, ToDoubleFunction<SeedResult> value) {
  /** The first arrived percentage the curve shows. */
  static final int CURVE_FROM = 75;

  static final ReportMetric UNALLOCATED_AT_100 = new ReportMetric("unallocatedAt100", SeedResult::unallocatedAt100);
  static final ReportMetric FINAL_ALLOCATION = new ReportMetric("finalAllocation", SeedResult::finalAllocation);
  static final ReportMetric FRAGMENTATION_AMOUNT = new ReportMetric("fragmentationAmountAt100", SeedResult::fragmentationAmountAt100);
  static final ReportMetric FRAGMENTATION_RATE = new ReportMetric("fragmentationRateAt100", SeedResult::fragmentationRateAt100);
  static final ReportMetric WALL_SECONDS = new ReportMetric("wallSeconds", SeedResult::wallSeconds);

  /** The points of the curve, from 75% to 130% arrived. */
  static List<ReportMetric> curve() {
    List<ReportMetric> points = new ArrayList<>();
    for (int x = CURVE_FROM; x <= SeedResult.LAST_PERCENT; x++) {
      int percent = x;
      points.add(new ReportMetric(Integer.toString(percent), r -> r.unallocatedAt(percent)));
    }
    return points;
  }
}
