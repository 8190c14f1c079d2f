package io.vgpu.bench.placement;

import java.math.BigDecimal;
import java.math.RoundingMode;

/**
 * Turns the per-pod log of a run into the paper's discrete curves, with the paper's analysis scripts'
 * arithmetic: each event's arrived share is rounded to a whole percent (half to even), its allocation
 * ratio to two decimals; the value at X % is the mean over the events that round to X (or, when none
 * does, to X−1..X+1), rounded to two decimals. Fragmentation is logged with two decimals, as the
 * simulator prints it, and averaged the same way.
 */
final class Recorder {
  private final long totalGpus;
  private final long capacityMilli;
  private final int[] bin;
  private final double[] allocation;
  private final double[] fragmentationMilli;
  private final double[] fragmentationRate;
  private int events;

  Recorder(int expectedEvents, long capacityMilli) {
    this.capacityMilli = capacityMilli;
    this.totalGpus = capacityMilli / TracePod.WHOLE_GPU;
    this.bin = new int[expectedEvents];
    this.allocation = new double[expectedEvents];
    this.fragmentationMilli = new double[expectedEvents];
    this.fragmentationRate = new double[expectedEvents];
  }

  /** Logs the cluster after one pod event. */
  void record(long arrivedMilli, long usedMilli, double fragmentedMilli) {
    int e = events++;
    bin[e] = (int) Math.rint((double) arrivedMilli / totalGpus / 10);
    allocation[e] = round2((double) usedMilli / totalGpus / 10);
    long idle = capacityMilli - usedMilli;
    fragmentationMilli[e] = round2(fragmentedMilli);
    fragmentationRate[e] = idle == 0 ? 0 : round2(100 * fragmentedMilli / idle);
  }

  SeedResult result(long seed, double wallSeconds) {
    double[] unallocated = new double[SeedResult.LAST_PERCENT + 1];
    for (int x = 0; x <= SeedResult.LAST_PERCENT; x++) {
      double alloc = meanAt(x, allocation);
      unallocated[x] = Double.isNaN(alloc) ? Double.NaN : round2(100 - round2(alloc));
    }
    double fragmentation = meanAt(100, fragmentationMilli);
    double amount = round2(100 * fragmentation / 1000 / totalGpus);
    double rate = round2(meanAt(100, fragmentationRate));
    double finalAllocation = events == 0 ? 0 : allocation[events - 1];
    return new SeedResult(seed, unallocated, finalAllocation, amount, rate, wallSeconds);
  }

  private double meanAt(int x, double[] values) {
    double mean = mean(x, x, values);
    return Double.isNaN(mean) ? mean(x - 1, x + 1, values) : mean;
  }

  private double mean(int from, int to, double[] values) {
    double sum = 0;
    int count = 0;
    for (int e = 0; e < events; e++) {
      if (bin[e] >= from && bin[e] <= to) {
        sum += values[e];
        count++;
      }
    }
    return count == 0 ? Double.NaN : sum / count;
  }

  /** Rounds to two decimals, half to even on the exact binary value, as Python's {@code round} does. */
  static double round2(double value) {
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return value;
    }
    return new BigDecimal(value).setScale(2, RoundingMode.HALF_EVEN).doubleValue();
  }
}
