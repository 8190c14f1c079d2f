package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.List;

/** Parses the seeds option: a range {@code 42..51}, a list {@code 42,43,50}, or one seed. */
final class Seeds {
  /** More runs than this per policy is surely a typo. */
  static final int MAX_SEEDS = 10_000;

  private Seeds() {}

  /**
   * Parses the seeds.
   *
   * @throws BenchInputException naming the value when it is not a range, a list or a number
   */
  static List<Long> parse(String text) {
    String value = text.trim();
    List<Long> seeds = new ArrayList<>();
    int dots = value.indexOf("..");
    if (dots >= 0) {
      long from = number(text, value.substring(0, dots));
      long to = number(text, value.substring(dots + 2));
      if (to < from) {
        throw bad(text, "the range ends before it starts");
      }
      if (to - from >= MAX_SEEDS) {
        throw bad(text, "more than " + MAX_SEEDS + " seeds");
      }
      for (long s = from; s <= to; s++) {
        seeds.add(s);
      }
      return seeds;
    }
    for (String part : value.split(",", -1)) {
      long seed = number(text, part);
      if (!seeds.contains(seed)) {
        seeds.add(seed);
      }
    }
    if (seeds.size() > MAX_SEEDS) {
      throw bad(text, "more than " + MAX_SEEDS + " seeds");
    }
    return seeds;
  }

  private static long number(String text, String part) {
    try {
      return Long.parseLong(part.trim());
    } catch (NumberFormatException e) {
      throw bad(text, "'" + part.trim() + "' is not a whole number (expected FROM..TO, a comma list, or one seed)");
    }
  }

  private static BenchInputException bad(String text, String why) {
    return new BenchInputException("--seeds value '" + text + "': " + why);
  }
}
