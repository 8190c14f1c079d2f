package io.vgpu.k8s.pod;

import io.vgpu.api.ScoringWeights;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.util.HashSet;
import java.util.Set;

/**
 * The {@code hami.io/device-scoring-weights} annotation, with HAMi's format and validation: exactly three
 * {@code key=value} entries with the keys {@code slot}, {@code core} and {@code memory}, each an integer
 * of at least 0, not all 0; e.g. {@code slot=1,core=1,memory=3}. Spaces around entries, keys and values
 * are allowed.
 */
public final class ScoringWeightsAnnotation {
  private ScoringWeightsAnnotation() {}

  /**
   * Parses the annotation's value.
   *
   * @throws PodRequestException with HAMi's message naming the annotation and the value when invalid
   */
  public static ScoringWeights parse(String value) {
    String[] parts = value.split(",", -1);
    if (parts.length != 3) {
      throw invalid(value, "expected slot, core, and memory weights");
    }
    long slot = 0;
    long core = 0;
    long memory = 0;
    Set<String> seen = new HashSet<>();
    for (String part : parts) {
      String entry = part.trim();
      int eq = entry.indexOf('=');
      if (eq < 0) {
        throw invalid(value, "expected key=value entries");
      }
      String key = entry.substring(0, eq).trim();
      if (!seen.add(key)) {
        throw invalid(value, "duplicate \"" + key + "\" weight");
      }
      long weight;
      try {
        weight = Long.parseLong(entry.substring(eq + 1).trim());
      } catch (NumberFormatException e) {
        throw invalid(value, "\"" + key + "\" weight must be an integer");
      }
      if (weight < 0) {
        throw invalid(value, "\"" + key + "\" weight must not be negative");
      }
      if (weight > Integer.MAX_VALUE) {
        throw invalid(value, "\"" + key + "\" weight must be at most " + Integer.MAX_VALUE);
      }
      switch (key) {
        case "slot" -> slot = weight;
        case "core" -> core = weight;
        case "memory" -> memory = weight;
        default -> throw invalid(value, "unknown weight \"" + key + "\"");
      }
    }
    if (slot == 0 && core == 0 && memory == 0) {
      throw invalid(value, "at least one weight must be positive");
    }
    return new ScoringWeights((int) slot, (int) core, (int) memory);
  }

  private static PodRequestException invalid(String value, String why) {
    return new PodRequestException(
        "invalid " + HamiAnnotations.DEVICE_SCORING_WEIGHTS + " annotation \"" + value + "\": " + why);
  }
}
