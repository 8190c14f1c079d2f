package io.vgpu.k8s.cli;

import io.vgpu.k8s.config.GoDurations;
import java.time.Duration;
import picocli.CommandLine;

/**
 * Parses durations the way HAMi's Go flags write them: a sequence of number-unit pairs such as {@code
 * 5m}, {@code 28s}, {@code 1h30m} or {@code 250ms}.
 */
public final class GoDuration implements CommandLine.ITypeConverter<Duration> {
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
    try {
      return GoDurations.parse(value);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.TypeConversionException(e.getMessage());
    }
  }
}
