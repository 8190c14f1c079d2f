package io.vgpu.api.spi;

import java.util.Map;

/**
 * Creates {@link DeviceSource}s of one kind; registered in {@code
 * META-INF/services/io.vgpu.api.spi.DeviceSourceProvider}. Providers must not throw from {@link
 * #name()}; an unusable configuration is reported by {@link #create(Map)}.
 */
public interface DeviceSourceProvider {

  /** The name users select the source by, e.g. {@code nvml} or {@code mock}. */
  String name();

  /**
   * Creates a source.
   *
   * @param options source-specific options (e.g. {@code profile} and {@code count} for the mock)
   * @throws DeviceSourceException when the source cannot be created; the message names the cause
   * @throws IllegalArgumentException when an option is invalid; the message names the option and value
   */
  DeviceSource create(Map<String, String> options);
}
