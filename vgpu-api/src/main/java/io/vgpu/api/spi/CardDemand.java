package io.vgpu.api.spi;

import io.vgpu.api.CardPortion;
import org.jspecify.annotations.Nullable;

/**
 * What one container needs from each card it is given, after defaults are applied: either an absolute
 * amount of memory or a percentage of each card's memory, and a compute share.
 *
 * @param count how many distinct cards the container needs
 * @param memoryMiB memory per card in MiB, or 0 when {@code memoryPercent} applies
 * @param memoryPercent percentage of each card's (scheduler-visible) memory, or 0 when {@code
 *     memoryMiB} applies
 * @param cores compute share per card, in percent
 * @param portion a portion of each card in KAI Scheduler's terms, which decides the memory instead of
 *     {@code memoryMiB} and {@code memoryPercent} (both 0), or {@code null}
 */
public record CardDemand(int count, int memoryMiB, int memoryPercent, int cores, @Nullable CardPortion portion) {

  /** Validates the fields. */
  public CardDemand {
    if (count < 1) {
      throw new IllegalArgumentException("card count " + count + " must be at least 1");
    }
    if (memoryMiB < 0 || memoryPercent < 0 || memoryPercent > 100 || cores < 0) {
      throw new IllegalArgumentException(
          "card demand memory=" + memoryMiB + " percent=" + memoryPercent + " cores=" + cores + " is out of range");
    }
    if (portion != null && (memoryMiB != 0 || memoryPercent != 0)) {
      throw new IllegalArgumentException("card demand with portion " + portion + " cannot also ask memory=" + memoryMiB + " percent=" + memoryPercent);
    }
  }

  /** A demand of memory or a percentage, without a card portion. */
  public CardDemand(int count, int memoryMiB, int memoryPercent, int cores) {
    this(count, memoryMiB, memoryPercent, cores, null);
  }

  /**
   * The memory this demand takes on a card with {@code totalMemoryMiB}: the absolute amount, or the
   * percentage of the total with integer division, as HAMi computes it, or the card portion's memory
   * ({@link CardPortion#memoryOn}).
   */
  public int memoryOn(int totalMemoryMiB) {
    if (portion != null) {
      return portion.memoryOn(totalMemoryMiB);
    }
    return memoryMiB > 0 ? memoryMiB : (int) ((long) totalMemoryMiB * memoryPercent / 100);
  }
}
