package io.vgpu.mock;

import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceProvider;
import java.util.Map;

/**
 * Provides the {@code mock} device source. Options: {@code profile} (default {@value
 * GpuProfiles#DEFAULT_PROFILE}), {@code count} (default 1), {@code uuidPrefix} (default {@value
 * MockDeviceSource#DEFAULT_UUID_PREFIX}), {@code numa} (default 0).
 */
public final class MockDeviceSourceProvider implements DeviceSourceProvider {
  @Override
  public String name() {
    return "mock";
  }

  @Override
  public DeviceSource create(Map<String, String> options) {
    for (String key : options.keySet()) {
      if (!key.equals("profile") && !key.equals("count") && !key.equals("uuidPrefix") && !key.equals("numa")) {
        throw new IllegalArgumentException("unknown mock device source option '" + key + "'; known: profile, count, uuidPrefix, numa");
      }
    }
    GpuProfile profile = GpuProfiles.get(options.getOrDefault("profile", GpuProfiles.DEFAULT_PROFILE));
    int count = intOption(options, "count", 1);
    int numa = intOption(options, "numa", 0);
    String prefix = options.getOrDefault("uuidPrefix", MockDeviceSource.DEFAULT_UUID_PREFIX);
    return new MockDeviceSource(profile, count, prefix, numa);
  }

  private static int intOption(Map<String, String> options, String key, int fallback) {
    String value = options.get(key);
    if (value == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("mock device source option " + key + "='" + value + "' is not an integer");
    }
  }
}
