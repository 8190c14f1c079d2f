package io.vgpu.k8s.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Parses durations the way HAMi's Go flags write them: a sequence of number-unit pairs such as {@code
 * 5m}, {@code 28s}, {@code 1h30m} or {@code 250ms}.
 */
public final class GoDuration implements CommandLine.ITypeConverter<Duration> {
  private static final Pattern PART = Pattern.compile("(\\d+)(ns|us|µs|ms|s|m|h)");

  @Override
  public Duration convert(String value) {
    return parse(value);
  }

  /**
   * Parses one duration.
   *
   * @throws CommandLine.TypeConversionException naming the value when it is malformed
   */
  public static Duration parse(String value) {
    if (value.equals("0")) {
      return Duration.ZERO;
    }
    Matcher m = PART.matcher(value);
    Duration total = Duration.ZERO;
    int end = 0;
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
        case "us", "µs" -> Duration.ofNanos(n * 1000);
        default -> Duration.ofNanos(n);
      });
      end = m.end();
    }
    if (end == 0 || end != value.length()) {
      throw new CommandLine.TypeConversionException("'" + value + "' is not a duration such as 5m, 28s or 1h30m");
    }
    return total;
  }
}
