package io.vgpu.mock;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The mock GPU profiles, read from {@code io/vgpu/mock/profiles.csv} on the class path: the single
 * definition that vgpu-native's mock drivers are generated from as well.
 */
public final class GpuProfiles {
  /** The class-path resource holding the profiles. */
  public static final String RESOURCE = "io/vgpu/mock/profiles.csv";

  /** The profile used when none is named. */
  public static final String DEFAULT_PROFILE = "A100-SXM4-40GB";

  private static final String HEADER =
      "profile,name,memoryMiB,computeCapability,multiprocessors,maxThreadsPerMultiprocessor,architecture,pciDeviceId";

  private static final Map<String, GpuProfile> PROFILES = load();

  private GpuProfiles() {}

  /** Every profile, in file order. */
  public static Collection<GpuProfile> all() {
    return PROFILES.values();
  }

  /** The profile with this key, if any. */
  public static Optional<GpuProfile> find(String profile) {
    return Optional.ofNullable(PROFILES.get(profile));
  }

  /**
   * The profile with this key.
   *
   * @throws IllegalArgumentException naming the unknown profile and the known ones
   */
  public static GpuProfile get(String profile) {
    return find(profile)
        .orElseThrow(
            () -> new IllegalArgumentException("unknown GPU profile '" + profile + "'; known profiles: " + String.join(", ", PROFILES.keySet())));
  }

  private static Map<String, GpuProfile> load() {
    InputStream in = GpuProfiles.class.getClassLoader().getResourceAsStream(RESOURCE);
    if (in == null) {
      throw new IllegalStateException(RESOURCE + " is missing from the class path");
    }
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      return parse(reader.lines().toList());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static Map<String, GpuProfile> parse(List<String> lines) {
    Map<String, GpuProfile> out = new LinkedHashMap<>();
    boolean headerSeen = false;
    int lineNo = 0;
    for (String raw : lines) {
      lineNo++;
      String line = raw.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      if (!headerSeen) {
        if (!line.equals(HEADER)) {
          throw new IllegalStateException(RESOURCE + ":" + lineNo + ": header must be '" + HEADER + "'");
        }
        headerSeen = true;
        continue;
      }
      String[] f = line.split(",", -1);
      if (f.length != 8) {
        throw new IllegalStateException(RESOURCE + ":" + lineNo + ": expected 8 fields, found " + f.length);
      }
      try {
        GpuProfile p =
            new GpuProfile(
                f[0], f[1], Long.parseLong(f[2]), f[3], Integer.parseInt(f[4]), Integer.parseInt(f[5]), f[6], Long.decode(f[7]));
        if (out.put(p.profile(), p) != null) {
          throw new IllegalStateException(RESOURCE + ":" + lineNo + ": profile " + p.profile() + " is defined twice");
        }
      } catch (NumberFormatException e) {
        throw new IllegalStateException(RESOURCE + ":" + lineNo + ": " + e.getMessage(), e);
      }
    }
    return out;
  }
}
