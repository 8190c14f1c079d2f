package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** A burst's filter percentiles from two readings of the scheduler's cumulative histogram. */
class SchedulerFilterHistogramTest {
  private static String exposition(int fitUnder5ms, int fitUnder25ms, int fitAll, int unschedulableAll) {
    return "# TYPE vgpu_filter_duration_seconds histogram\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"fit\",le=\"0.005\"} " + fitUnder5ms + "\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"fit\",le=\"0.025\"} " + fitUnder25ms + "\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"fit\",le=\"+Inf\"} " + fitAll + "\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"unschedulable\",le=\"0.005\"} 0\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"unschedulable\",le=\"0.025\"} 0\n"
        + "vgpu_filter_duration_seconds_bucket{result=\"unschedulable\",le=\"+Inf\"} " + unschedulableAll + "\n"
        + "vgpu_bind_duration_seconds_bucket{result=\"ok\",le=\"0.005\"} 999\n";
  }

  @Test
  void theBurstsPercentilesAreTheBucketsOfTheDifference() {
    TreeMap<Double, Double> before = SchedulerFilterHistogram.buckets(exposition(1000, 1000, 1000, 0));
    // The burst: 90 calls under 5 ms, 9 under 25 ms, one slower.
    TreeMap<Double, Double> after = SchedulerFilterHistogram.buckets(exposition(1090, 1099, 1100, 0));
    assertThat(SchedulerFilterHistogram.percentileMillis(before, after, 50)).isEqualTo(5.0);
    assertThat(SchedulerFilterHistogram.percentileMillis(before, after, 99)).isEqualTo(25.0);
    assertThat(SchedulerFilterHistogram.percentileMillis(before, after, 100)).isInfinite();
    assertThat(SchedulerFilterHistogram.percentileMillis(after, after, 99)).as("no calls").isZero();
  }

  @Test
  void bothResultsCountAndOtherHistogramsDoNot() {
    TreeMap<Double, Double> b = SchedulerFilterHistogram.buckets(exposition(3, 4, 5, 2));
    assertThat(b).containsEntry(0.005, 3.0).containsEntry(0.025, 4.0).containsEntry(Double.POSITIVE_INFINITY, 7.0).hasSize(3);
  }
}
