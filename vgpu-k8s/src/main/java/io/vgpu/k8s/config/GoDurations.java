package io.vgpu.k8s.config;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Durations written the way Go writes them (HAMi's flags, Kubernetes' configuration): a sequence of
 * number-unit pairs such as {@code 5m}, {@code 28s}, {@code 1h30m} or {@code 250ms}, or {@code 0}.
 */
public final class GoDurations {
  private static final Pattern PART = Pattern.compile("(\\d+)(ns|us|µs|ms|s|m|h)");

  private GoDurations() {}

  /**
   * Parses one duration.
   *
   * @throws IllegalArgumentException naming the value when it is malformed
   */
  public static Duration parse(String value) {
    if (value.equals("0")) {
      return Duration.ZERO;
    }
    Matcher m = PART.matcher(value);
    Duration total = Duration.ZERO;
    int end = 0;
    try {
      while (m.find()) {
        if (m.start() != end) {
          break;
        }
        long n = Long.parseLong(m.group(1));
        total = total.plus(switch (m.group(2)) {
          case "h" -> Duration.ofHours(n);
          case "m" -> Duration.ofMinutes(n);
          case "s" -> Duration.ofSeconds(n);
          case "ms" -> Duration.ofMillis(n);
          case "us", "µs" -> Duration.ofNanos(Math.multiplyExact(n, 1000));
          default -> Duration.ofNanos(n);
        });
        end = m.end();
      }
    } catch (ArithmeticException | NumberFormatException e) {
      throw new IllegalArgumentException("'" + value + "' is too long a duration");
    }
    if (end == 0 || end != value.length()) {
      throw new IllegalArgumentException("'" + value + "' is not a duration such as 5m, 28s or 1h30m");
    }
    return total;
  }

  /**
   * Writes {@code d} the way {@link #parse} reads it: whole seconds as hours, minutes and seconds (e.g.
   * {@code 2s}, {@code 1m30s}, {@code 10m}), anything finer in the largest exact unit ({@code 250ms}).
   */
  public static String format(Duration d) {
    if (d.isZero()) {
      return "0";
    }
    long nanos = d.toNanos();
    if (nanos % 1_000_000_000L == 0) {
      long seconds = nanos / 1_000_000_000L;
      StringBuilder out = new StringBuilder();
      if (seconds >= 3600) {
        out.append(seconds / 3600).append('h');
      }
      if (seconds % 3600 >= 60) {
        out.append(seconds % 3600 / 60).append('m');
      }
      if (seconds % 60 != 0) {
        out.append(seconds % 60).append('s');
      }
      return out.toString();
    }
    if (nanos % 1_000_000L == 0) {
      return nanos / 1_000_000L + "ms";
    }
    return nanos % 1000 == 0 ? nanos / 1000 + "us" : nanos + "ns";
  }
}
