package io.vgpu.examples.lab.kai;

import io.vgpu.k8s.kai.KaiGpuRequest;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * KAI's arithmetic of a fraction: the per-card MiB its scheduler reads from the node label (floored to
 * 100 MiB), the portion of a memory request (ceiled to two decimals in IEEE double), the {@code "%.2f"}
 * string its BindRequest carries, and the hamicore plugin's limit ({@code int(raw label × portion)} MiB).
 * Each as KAI v0.17 computes it, float64 artifacts included (kai.md §1.3, §2).
 */
public final class KaiPortion {
  /** What KAI's scheduler takes for a card's memory when the label is missing or not a number. */
  public static final long UNSYNCED_MIB = 100;
  private static final long MIB = 1024 * 1024;

  private KaiPortion() {}

  /**
   * The scheduler's MiB of every card of a node: the label floored to a multiple of 100 MiB (a value of
   * a MiB² or more is taken as bytes); empty when the label is missing or not an integer (KAI then uses
   * {@link #UNSYNCED_MIB} and marks the node not synced).
   */
  public static OptionalLong flooredMiB(String label) {
    if (label == null) {
      return OptionalLong.empty();
    }
    long v;
    try {
      v = Long.parseLong(label.trim());
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
    if (v >= MIB) {
      v = v / MIB;
    }
    return OptionalLong.of(v - v % 100);
  }

  /** The portion of one card a memory request gets: {@code ceil(mem / floored × 100) / 100} in double. */
  public static double memoryPortion(long requestMiB, long flooredMiB) {
    return Math.ceil((double) requestMiB / (double) flooredMiB * 100) / 100;
  }

  /** How KAI counts a {@code gpu-fraction} in a queue: {@code round(f × 100) / 100}. */
  public static double fractionPortion(double fraction) {
    return Math.round(fraction * 100) / 100.0;
  }

  /** The BindRequest's {@code receivedGPU.portion}: Go's {@code %.2f}. */
  public static String formatted(double portion) {
    return String.format(Locale.ROOT, "%.2f", portion);
  }

  /** Whether KAI takes a portion as one card's share: {@code 0 < p ≤ 1}. */
  public static boolean validPortion(double portion) {
    return portion > 0 && portion <= 1;
  }

  /**
   * The MiB a fraction pod takes of a card in the scheduler's capacity check: a memory request's
   * annotation as written; a fraction's {@code int64(f × floored)}.
   */
  public static long requestMiB(KaiGpuRequest request, long flooredMiB) {
    if (request.memoryMiB().isPresent()) {
      return request.memoryMiB().getAsLong();
    }
    return (long) (request.fraction().orElseThrow() * flooredMiB);
  }

  /**
   * The hamicore plugin's {@code CUDA_DEVICE_MEMORY_LIMIT}: {@code int64(raw label × portion)} followed by
   * {@code m}; empty — silently, as KAI writes nothing then — when the label or portion is missing, not a
   * number, or the result is not positive.
   */
  public static java.util.Optional<String> memoryLimit(String rawLabel, String portion) {
    if (rawLabel == null || portion == null) {
      return java.util.Optional.empty();
    }
    long total;
    double p;
    try {
      total = Long.parseLong(rawLabel.trim());
      p = Double.parseDouble(portion.trim());
    } catch (NumberFormatException e) {
      return java.util.Optional.empty();
    }
    if (total <= 0) {
      return java.util.Optional.empty();
    }
    long limit = (long) ((double) total * p);
    return limit <= 0 ? java.util.Optional.empty() : java.util.Optional.of(limit + "m");
  }
}
