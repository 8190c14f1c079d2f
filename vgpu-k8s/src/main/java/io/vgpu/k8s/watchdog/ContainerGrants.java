package io.vgpu.k8s.watchdog;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.nvidia.HookLayout;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a container was granted on each card, as the watchdog holds it to. The scheduler's annotation
 * ({@code hami.io/vgpu-devices-allocated}) names the cards and their MiB in the container's device
 * order; the limits file this node agent wrote at Allocate ({@code <hook>/vgpu/limits/<uid>_<name>},
 * outside every container's reach) caps each of them. A tenant allowed to patch its pod can edit the
 * annotation, never the file, so an edited annotation can lower a grant but never raise it.
 *
 * <p>A container is governed when it has a limits file or its pod carries the annotation (a pod
 * allocated by another device plugin, such as HAMi's before a migration). A governed container's grant
 * on a card the annotation does not give it is 0, and so is every grant when the annotation is
 * unreadable while a limits file exists, or the limits file cannot be read: a limit fails closed.
 */
final class ContainerGrants {
  private static final Pattern LIMIT_KEY = Pattern.compile("CUDA_DEVICE_MEMORY_LIMIT(?:_(\\d{1,2}))?");
  private static final Pattern SIZE = Pattern.compile("(\\d{1,19})([kmgt]?)");
  private static final int MAX_LIMITS_FILE = 64 * 1024;
  private static final long MIB = 1L << 20;

  private final HookLayout layout;

  ContainerGrants(HookLayout layout) {
    this.layout = layout;
  }

  /**
   * The grants of container {@code name} of {@code pod}, in bytes by card UUID.
   *
   * @return the grants (a card missing from them is granted 0), or empty when the container is not
   *     governed: no limits file and no readable annotation
   */
  Optional<Map<String, Long>> of(Pod pod, String name) {
    Optional<Limits> file = limitsFile(pod.getMetadata().getUid(), name);
    Optional<List<DeviceGrant>> annotated = annotated(pod, name);
    if (file.isEmpty() && annotated.isEmpty()) {
      return Optional.empty();
    }
    Map<String, Long> out = new LinkedHashMap<>();
    List<DeviceGrant> cards = annotated.orElse(List.of());
    for (int ordinal = 0; ordinal < cards.size(); ordinal++) {
      long bytes = cards.get(ordinal).memoryMiB() * MIB;
      if (file.isPresent()) {
        OptionalLong cap = file.get().of(ordinal);
        bytes = cap.isEmpty() ? 0 : cap.getAsLong() == 0 ? bytes : Math.min(bytes, cap.getAsLong());
      }
      out.merge(cards.get(ordinal).uuid(), bytes, Math::min);
    }
    return Optional.of(out);
  }

  /** The container's cards from the pod's annotation: empty when it is missing or unreadable. */
  private static Optional<List<DeviceGrant>> annotated(Pod pod, String name) {
    String value = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_ALLOCATED);
    if (value == null) {
      return Optional.empty();
    }
    List<List<DeviceGrant>> perContainer;
    try {
      perContainer = DeviceListCodec.decode(value);
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    List<Container> containers = PodRefs.containers(pod);
    for (int c = 0; c < containers.size(); c++) {
      if (name.equals(containers.get(c).getName())) {
        return Optional.of(c < perContainer.size() ? perContainer.get(c) : List.of());
      }
    }
    return Optional.of(List.of());
  }

  private Optional<Limits> limitsFile(String podUid, String name) {
    Path file;
    try {
      file = Path.of(layout.limitsFile(podUid, name));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
      return Optional.empty();
    }
    try {
      if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS) || Files.size(file) > MAX_LIMITS_FILE) {
        return Optional.of(Limits.UNREADABLE);
      }
      return Optional.of(Limits.parse(Files.readString(file, StandardCharsets.UTF_8)));
    } catch (IOException e) {
      return Optional.of(Limits.UNREADABLE);
    }
  }

  /**
   * The memory limits of a limits file (libvgpu's format: {@code KEY=VALUE} lines, {@code #} comments;
   * sizes in bytes or with a binary {@code k}/{@code m}/{@code g}/{@code t} suffix).
   *
   * @param byOrdinal {@code CUDA_DEVICE_MEMORY_LIMIT_<i>} in bytes
   * @param all {@code CUDA_DEVICE_MEMORY_LIMIT} in bytes, or -1 when absent
   * @param readable false when the file or one of its memory limits could not be read
   */
  record Limits(Map<Integer, Long> byOrdinal, long all, boolean readable) {
    static final Limits UNREADABLE = new Limits(Map.of(), -1, false);

    static Limits parse(String content) {
      Map<Integer, Long> byOrdinal = new HashMap<>();
      long all = -1;
      for (String raw : content.split("\n")) {
        String line = raw.strip();
        int eq = line.indexOf('=');
        if (line.startsWith("#") || eq < 0) {
          continue;
        }
        Matcher key = LIMIT_KEY.matcher(line.substring(0, eq).strip());
        if (!key.matches()) {
          continue;
        }
        long bytes = bytes(line.substring(eq + 1).strip());
        if (bytes < 0) {
          return UNREADABLE;
        }
        if (key.group(1) == null) {
          all = bytes;
        } else {
          byOrdinal.put(Integer.parseInt(key.group(1)), bytes);
        }
      }
      return new Limits(byOrdinal, all, true);
    }

    /** The limit of device {@code ordinal} in bytes (0 = none), or empty when the file sets none for it or is unreadable. */
    OptionalLong of(int ordinal) {
      if (!readable) {
        return OptionalLong.empty();
      }
      Long specific = byOrdinal.get(ordinal);
      if (specific != null) {
        return OptionalLong.of(specific);
      }
      return all >= 0 ? OptionalLong.of(all) : OptionalLong.of(0);
    }

    /** A size in bytes, or -1 when malformed or too large. */
    private static long bytes(String text) {
      Matcher m = SIZE.matcher(text.toLowerCase(Locale.ROOT));
      if (!m.matches()) {
        return -1;
      }
      int shift = switch (m.group(2)) {
        case "k" -> 10;
        case "m" -> 20;
        case "g" -> 30;
        case "t" -> 40;
        default -> 0;
      };
      try {
        long value = Long.parseLong(m.group(1));
        return value > (Long.MAX_VALUE >> shift) ? -1 : value << shift;
      } catch (NumberFormatException e) {
        return -1;
      }
    }
  }
}
