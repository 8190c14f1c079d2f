package io.vgpu.api;

/**
 * How a node shares each of its GPUs; the keys and defaults of HAMi's device configuration
 * ({@code deviceSplitCount}, {@code deviceMemoryScaling}, {@code deviceCoreScaling},
 * {@code preConfiguredDeviceMemory}).
 *
 * @param splitCount how many containers may share one GPU at once ({@code deviceSplitCount})
 * @param memoryScaling factor applied to a GPU's memory before it is offered to the scheduler; above 1
 *     memory is oversubscribed ({@code deviceMemoryScaling})
 * @param coreScaling factor applied to a GPU's 100 compute units ({@code deviceCoreScaling})
 * @param preConfiguredMemoryMiB memory to assume for GPUs that report none (unified-memory parts), 0 to
 *     skip such GPUs ({@code preConfiguredDeviceMemory})
 */
public record SharingConfig(
    int splitCount, double memoryScaling, double coreScaling, long preConfiguredMemoryMiB) {

  /** HAMi's defaults: 10 sharers, no scaling. */
  public static final SharingConfig DEFAULT = new SharingConfig(10, 1.0, 1.0, 0);

  /** Validates the fields. */
  public SharingConfig {
    if (splitCount < 1) {
      throw new IllegalArgumentException("deviceSplitCount " + splitCount + " must be at least 1");
    }
    if (!(memoryScaling > 0) || Double.isInfinite(memoryScaling)) {
      throw new IllegalArgumentException("deviceMemoryScaling " + memoryScaling + " must be positive");
    }
    if (!(coreScaling > 0) || Double.isInfinite(coreScaling)) {
      throw new IllegalArgumentException("deviceCoreScaling " + coreScaling + " must be positive");
    }
    if (preConfiguredMemoryMiB < 0) {
      throw new IllegalArgumentException(
          "preConfiguredDeviceMemory " + preConfiguredMemoryMiB + " must not be negative");
    }
  }

  /** Returns a copy with another split count. */
  public SharingConfig withSplitCount(int value) {
    return new SharingConfig(value, memoryScaling, coreScaling, preConfiguredMemoryMiB);
  }

  /** Returns a copy with another memory scaling. */
  public SharingConfig withMemoryScaling(double value) {
    return new SharingConfig(splitCount, value, coreScaling, preConfiguredMemoryMiB);
  }

  /** Returns a copy with another core scaling. */
  public SharingConfig withCoreScaling(double value) {
    return new SharingConfig(splitCount, memoryScaling, value, preConfiguredMemoryMiB);
  }

  /** Returns a copy with another pre-configured memory. */
  public SharingConfig withPreConfiguredMemoryMiB(long value) {
    return new SharingConfig(splitCount, memoryScaling, coreScaling, value);
  }
}
