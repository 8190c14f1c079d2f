package io.vgpu.api;

/**
 * Weights of the three terms of a device's usage score (shared slots, compute, memory); HAMi's
 * {@code hami.io/device-scoring-weights} annotation.
 *
 * @param slot weight of the share of sharing slots in use
 * @param core weight of the share of compute in use
 * @param memory weight of the share of memory in use
 */
public record ScoringWeights(int slot, int core, int memory) {

  /** Equal weights, HAMi's default. */
  public static final ScoringWeights DEFAULT = new ScoringWeights(1, 1, 1);

  /** Validates that weights are non-negative and not all zero. */
  public ScoringWeights {
    if (slot < 0 || core < 0 || memory < 0) {
      throw new IllegalArgumentException(
          "scoring weights slot=" + slot + ",core=" + core + ",memory=" + memory + " must not be negative");
    }
    if (slot == 0 && core == 0 && memory == 0) {
      throw new IllegalArgumentException("scoring weights must not all be zero");
    }
  }
}
