package io.vgpu.nvidia;

import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceException;
import io.vgpu.api.spi.DeviceSourceProvider;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Provides the {@code nvml} device source. Options (all optional):
 *
 * <ul>
 *   <li>{@code library}: a specific {@code libnvidia-ml.so.1} instead of the usual search;
 *   <li>{@code filterdevices.uuid}, {@code filterdevices.index}: comma lists of GPUs not to offer
 *       (HAMi's per-node {@code filterdevices});
 *   <li>{@code preConfiguredDeviceMemory}: MiB for GPUs that report no memory;
 *   <li>{@code sysfs}: where sysfs is mounted (default {@code /sys}).
 * </ul>
 *
 * The Xid policy comes from the process environment ({@code DP_DISABLE_HEALTHCHECKS}, {@code
 * DP_ENABLE_HEALTHCHECKS}), as in HAMi.
 */
public final class NvidiaDeviceSourceProvider implements DeviceSourceProvider {
  private static final List<String> KEYS =
      List.of("library", "filterdevices.uuid", "filterdevices.index", "preConfiguredDeviceMemory", "sysfs");

  @Override
  public String name() {
    return NvidiaDeviceSource.NAME;
  }

  @Override
  public DeviceSource create(Map<String, String> options) {
    for (String key : options.keySet()) {
      if (!KEYS.contains(key)) {
        throw new IllegalArgumentException("unknown nvml device source option '" + key + "'; known: " + String.join(", ", KEYS));
      }
    }
    NvidiaDeviceSource.Options parsed =
        new NvidiaDeviceSource.Options(
            list(options, "filterdevices.uuid"),
            indexes(options),
            number(options, "preConfiguredDeviceMemory"),
            Path.of(options.getOrDefault("sysfs", "/sys")),
            XidHealthPolicy.fromEnvironment(System.getenv()));
    Nvml nvml;
    try {
      String library = options.get("library");
      nvml = library == null ? Nvml.open() : Nvml.open(Path.of(library));
    } catch (NvmlException e) {
      throw new DeviceSourceException(e.getMessage(), e);
    }
    try {
      return new NvidiaDeviceSource(nvml, parsed);
    } catch (NvmlException e) {
      nvml.close();
      throw new DeviceSourceException("the GPUs cannot be read: " + e.getMessage(), e);
    }
  }

  private static Set<String> list(Map<String, String> options, String key) {
    Set<String> out = new LinkedHashSet<>();
    for (String item : options.getOrDefault(key, "").split(",")) {
      if (!item.isBlank()) {
        out.add(item.strip());
      }
    }
    return out;
  }

  private static Set<Integer> indexes(Map<String, String> options) {
    Set<Integer> out = new LinkedHashSet<>();
    for (String item : list(options, "filterdevices.index")) {
      try {
        out.add(Integer.parseUnsignedInt(item));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "nvml device source option filterdevices.index='" + options.get("filterdevices.index") + "': '" + item + "' is not a GPU index");
      }
    }
    return out;
  }

  private static long number(Map<String, String> options, String key) {
    String value = options.get(key);
    if (value == null) {
      return 0;
    }
    try {
      return Long.parseUnsignedLong(value.strip());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("nvml device source option " + key + "='" + value + "' is not a number of MiB");
    }
  }
}
