package io.vgpu.api.spi;

/**
 * What one container needs from each card it is given, after defaults are applied: either an absolute
 * amount of memory or a percentage of each card's memory, and a compute share.
 *
 * @param count how many distinct cards the container needs
 * @param memoryMiB memory per card in MiB, or 0 when {@code memoryPercent} applies
 * @param memoryPercent percentage of each card's (scheduler-visible) memory, or 0 when {@code
 *     memoryMiB} applies
 * @param cores compute share per card, in percent
 */
public record CardDemand(int count, int memoryMiB, int memoryPercent, int cores) {

  /** Validates the fields. */
  public CardDemand {
    if (count < 1) {
      throw new IllegalArgumentException("card count " + count + " must be at least 1");
    }
    if (memoryMiB < 0 || memoryPercent < 0 || memoryPercent > 100 || cores < 0) {
      throw new IllegalArgumentException(
          "card demand memory=" + memoryMiB + " percent=" + memoryPercent + " cores=" + cores + " is out of range");
    }
  }

  /**
   * The memory this demand takes on a card with {@code totalMemoryMiB}: the absolute amount, or the
   * percentage of the total with integer division, as HAMi computes it.
   */
  public int memoryOn(int totalMemoryMiB) {
    return memoryMiB > 0 ? memoryMiB : (int) ((long) totalMemoryMiB * memoryPercent / 100);
  }
}
