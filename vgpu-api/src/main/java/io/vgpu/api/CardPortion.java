package io.vgpu.api;

/**
 * A share of each card given the way KAI Scheduler gives it: a portion in hundredths of a card, either
 * fixed ({@code gpu-fraction}) or made from a memory amount on each card ({@code gpu-memory}). Like
 * {@code gpumem-percentage}, what it takes is a function of the card: on a card of {@code M} MiB the
 * portion is {@code p} and the memory is {@code int(M × p)} MiB, both computed in IEEE doubles exactly
 * as KAI v0.17 computes them, so the limit a container gets matches KAI's byte for byte.
 *
 * @param hundredths the fixed portion in hundredths of a card (1 to 100), or 0 when {@code memoryMiB}
 *     applies
 * @param memoryMiB memory per card in MiB to be rounded up to a portion of each card, or 0 when {@code
 *     hundredths} applies
 */
public record CardPortion(int hundredths, int memoryMiB) {
  /** A portion above this many hundredths is more than a card and never fits; it also bounds the arithmetic. */
  public static final int OVER_A_CARD = 101;

  /** Validates that exactly one of the two is set and in range. */
  public CardPortion {
    if ((hundredths == 0) == (memoryMiB == 0)) {
      throw new IllegalArgumentException("a card portion needs exactly one of hundredths (" + hundredths + ") and memoryMiB (" + memoryMiB + ")");
    }
    if (hundredths < 0 || hundredths > 100) {
      throw new IllegalArgumentException("portion " + hundredths + "/100 must be between 1 and 100 hundredths of a card");
    }
    if (memoryMiB < 0) {
      throw new IllegalArgumentException("portion memory " + memoryMiB + " MiB is negative");
    }
  }

  /** A fixed portion of each card, in hundredths. */
  public static CardPortion ofHundredths(int hundredths) {
    return new CardPortion(hundredths, 0);
  }

  /** The smallest portion of each card, in hundredths, that holds {@code memoryMiB}. */
  public static CardPortion ofMemory(int memoryMiB) {
    return new CardPortion(0, memoryMiB);
  }

  /**
   * The portion this takes of a card of {@code cardMemoryMiB}, in hundredths. A memory amount is divided
   * by the card's memory floored to a multiple of 100 MiB and rounded up to two decimals, as KAI v0.17
   * does ({@code ceil(mem / floor100(card) × 100)}); more than a card is {@link #OVER_A_CARD}.
   */
  public int hundredthsOn(int cardMemoryMiB) {
    if (hundredths > 0) {
      return hundredths;
    }
    int floored = cardMemoryMiB - cardMemoryMiB % 100;
    if (floored <= 0) {
      return OVER_A_CARD;
    }
    double portion = Math.ceil((double) memoryMiB / floored * 100);
    return portion > OVER_A_CARD ? OVER_A_CARD : (int) portion;
  }

  /** The memory this takes on a card of {@code cardMemoryMiB}: {@code int(card × portion)} MiB. */
  public int memoryOn(int cardMemoryMiB) {
    return (int) ((double) cardMemoryMiB * (hundredthsOn(cardMemoryMiB) / 100.0));
  }
}
