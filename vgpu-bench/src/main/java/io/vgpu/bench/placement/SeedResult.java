package io.vgpu.bench.placement;

import java.util.Arrays;

/**
 * What one seed's run measured. Percentages are of the cluster's GPU capacity, except the
 * fragmentation rate, which is of the idle GPU share; a value the run has no data for is NaN.
 */
public final class SeedResult {
  /** The last arrived-workload percentage the curve covers. */
  public static final int LAST_PERCENT = 130;

  private final long seed;
  private final double[] unallocated;
  private final double finalAllocation;
  private final double fragmentationAmountAt100;
  private final double fragmentationRateAt100;
  private final double wallSeconds;

  SeedResult(
      long seed, double[] unallocated, double finalAllocation, double fragmentationAmountAt100, double fragmentationRateAt100, double wallSeconds) {
    this.seed = seed;
    this.unallocated = Arrays.copyOf(unallocated, LAST_PERCENT + 1);
    this.finalAllocation = finalAllocation;
    this.fragmentationAmountAt100 = fragmentationAmountAt100;
    this.fragmentationRateAt100 = fragmentationRateAt100;
    this.wallSeconds = wallSeconds;
  }

  /** The seed. */
  public long seed() {
    return seed;
  }

  /** Unallocated GPU % once {@code arrivedPercent} % of capacity has arrived (0..130). */
  public double unallocatedAt(int arrivedPercent) {
    return unallocated[arrivedPercent];
  }

  /** Unallocated GPU % at arrived = 100 %, the headline number. */
  public double unallocatedAt100() {
    return unallocated[100];
  }

  /** GPU allocation % after the last pod. */
  public double finalAllocation() {
    return finalAllocation;
  }

  /** Fragmented idle GPU share as a % of capacity, at arrived = 100 %. */
  public double fragmentationAmountAt100() {
    return fragmentationAmountAt100;
  }

  /** Fragmented idle GPU share as a % of idle GPU share, at arrived = 100 %. */
  public double fragmentationRateAt100() {
    return fragmentationRateAt100;
  }

  /** Wall time of the run in seconds. */
  public double wallSeconds() {
    return wallSeconds;
  }
}
