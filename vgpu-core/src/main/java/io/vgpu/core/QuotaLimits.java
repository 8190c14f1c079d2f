package io.vgpu.core;

/**
 * A namespace's device quota, from its ResourceQuota's {@code limits.nvidia.com/gpumem} and {@code
 * limits.nvidia.com/gpucores}. A limit that is not set is {@link #UNLIMITED}; a limit of 0 that is set
 * blocks all use.
 *
 * @param memoryMiB the memory limit in MiB (before the memory factor), or {@link #UNLIMITED}
 * @param cores the compute limit in percent of a card, or {@link #UNLIMITED}
 */
public record QuotaLimits(long memoryMiB, long cores) {

  /** Marks a limit that is not set. */
  public static final long UNLIMITED = -1;

  /** No limit on anything. */
  public static final QuotaLimits NONE = new QuotaLimits(UNLIMITED, UNLIMITED);

  /** Validates the limits. */
  public QuotaLimits {
    if (memoryMiB < UNLIMITED || cores < UNLIMITED) {
      throw new IllegalArgumentException(
          "quota limits memory=" + memoryMiB + " cores=" + cores + " must not be negative");
    }
  }

  /** Whether any limit is set. */
  public boolean limitsAnything() {
    return memoryMiB != UNLIMITED || cores != UNLIMITED;
  }
}
