package io.vgpu.k8s.cli;

import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceException;
import io.vgpu.api.spi.DeviceSourceProvider;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.yaml.InputException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * The options that pick a node's device source ({@code --source}, {@code --mock-profile}, {@code
 * --mock-count}), shared by the commands that read GPUs. Sources are found through {@link
 * ServiceLoader}; a source that cannot start is an error the user can act on, never a fallback.
 */
final class DeviceSourceOptions {
  @Option(names = "--source", paramLabel = "SOURCE", defaultValue = "nvml", description = "Where the GPUs come from: nvml (the NVIDIA driver) or mock (default ${DEFAULT-VALUE}).")
  String source = "nvml";

  @Option(names = "--mock-profile", paramLabel = "PROFILE", description = "With --source mock: the GPU profile, e.g. A100-SXM4-40GB.")
  @Nullable String mockProfile;

  @Option(names = "--mock-count", paramLabel = "N", description = "With --source mock: how many GPUs.")
  @Nullable Integer mockCount;

  /**
   * Opens the chosen source.
   *
   * @throws InputException naming the option when the source is unknown or cannot start
   */
  DeviceSource open(DeviceConfig config) {
    DeviceSourceProvider provider = provider();
    try {
      return provider.create(options(config));
    } catch (DeviceSourceException | IllegalArgumentException e) {
      throw new InputException("--source " + source + ": " + e.getMessage());
    }
  }

  private DeviceSourceProvider provider() {
    TreeSet<String> known = new TreeSet<>();
    for (DeviceSourceProvider p : ServiceLoader.load(DeviceSourceProvider.class, DeviceSourceOptions.class.getClassLoader())) {
      if (p.name().equals(source)) {
        return p;
      }
      known.add(p.name());
    }
    throw new InputException("--source: unknown device source '" + source + "' (known: " + String.join(", ", known) + ")");
  }

  private Map<String, String> options(DeviceConfig config) {
    Map<String, String> options = new LinkedHashMap<>();
    if (source.equals("mock")) {
      if (mockProfile != null) {
        options.put("profile", mockProfile);
      }
      if (mockCount != null) {
        options.put("count", Integer.toString(mockCount));
      }
    } else if (mockProfile != null || mockCount != null) {
      throw new InputException("--mock-profile and --mock-count apply to --source mock only, not to --source " + source);
    }
    if (source.equals("nvml") && config.preConfiguredDeviceMemory() > 0) {
      options.put("preConfiguredDeviceMemory", Long.toString(config.preConfiguredDeviceMemory()));
    }
    return options;
  }
}
