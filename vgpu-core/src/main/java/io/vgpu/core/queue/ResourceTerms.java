package io.vgpu.core.queue;

/**
 * What a queue is owed and allowed of one resource. KAI gives no defaults in its CRD, so an absent
 * field is 0: {@link #NONE}.
 *
 * @param quota the deserved amount; {@link #ALL} means the whole of what is being divided
 * @param limit the most the queue may hold; {@link #UNLIMITED} means no limit, 0 blocks every request
 * @param overQuotaWeight the queue's weight when what is left over is divided; 0 takes no part
 */
public record ResourceTerms(double quota, double limit, double overQuotaWeight) {
  /** A quota of everything there is. */
  public static final double ALL = -1;
  /** No limit. */
  public static final double UNLIMITED = -1;
  /** Every field absent. */
  public static final ResourceTerms NONE = new ResourceTerms(0, 0, 0);

  /**
   * Validates the terms.
   *
   * @throws IllegalArgumentException naming the field when a value is not finite, or negative other than -1
   */
  public ResourceTerms {
    check("quota", quota);
    check("limit", limit);
    check("overQuotaWeight", overQuotaWeight);
    if (overQuotaWeight < 0) {
      throw new IllegalArgumentException("overQuotaWeight " + overQuotaWeight + " must not be negative");
    }
  }

  /** Whether the quota is {@link #ALL}. */
  public boolean quotaIsAll() {
    return quota == ALL;
  }

  /** Whether there is no limit. */
  public boolean unlimited() {
    return limit == UNLIMITED;
  }

  private static void check(String field, double value) {
    if (!Double.isFinite(value) || (value < 0 && value != -1)) {
      throw new IllegalArgumentException(field + " " + value + " must be -1 or a finite number not below 0");
    }
  }
}
