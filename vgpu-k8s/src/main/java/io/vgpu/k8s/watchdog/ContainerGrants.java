package io.vgpu.k8s.watchdog;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.NvidiaContainerContract;
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
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * What a container was granted on each card, as the watchdog holds it to. First choice is the node's
 * own record: the limits file this node agent wrote at Allocate ({@code <hook>/vgpu/limits/<uid>_<name>},
 * outside every container's reach), whose {@code # devices:} line names the cards Allocate gave the
 * container in ordinal order and whose {@code CUDA_DEVICE_MEMORY_LIMIT_<i>} lines their sizes. No pod
 * annotation changes it, and it outlives a replaced grant key.
 *
 * <p>Without such a file (a pod allocated by another device plugin, such as HAMi's before a migration,
 * or a file from an agent that wrote no {@code # devices:} line) the pod's grant is what {@link PodGrants}
 * says: the scheduler's, verified when the agent has the grant key; a limits file without the cards
 * still caps it. A pod that holds no grant at all, or one that is not the scheduler's, is {@link
 * Ungranted}: held to 0. A granted pod's container on a card its grant does not name is granted 0
 * there, and a limits file that cannot be read grants nothing anywhere: a limit fails closed.
 *
 * <p>Under KAI Scheduler two more records come first. A KAI fraction container holds what its grant
 * file says ({@code <hook>/vgpu/kai/<uid>_<name>/limits}, written by this node agent from KAI's
 * decision, read the same way: its cards and their sizes). A container holding whole cards holds all
 * the memory of the cards kubelet gave it ({@link WholeCardGrants}). Any other card it uses, it holds
 * 0 of.
 */
final class ContainerGrants {
  private static final Pattern LIMIT_KEY = Pattern.compile("CUDA_DEVICE_MEMORY_LIMIT(?:_(\\d{1,2}))?");
  private static final Pattern SIZE = Pattern.compile("(\\d{1,19})([kmgt]?)");
  private static final int MAX_LIMITS_FILE = 64 * 1024;
  private static final long MIB = 1L << 20;

  /** What a container holds. */
  sealed interface Holding permits Held, Ungranted {}

  /**
   * A grant: bytes by card UUID; a card it does not name is granted 0.
   *
   * @param bytes the grant on each card ({@link Long#MAX_VALUE} where the limits file sets no limit)
   */
  record Held(Map<String, Long> bytes) implements Holding {
    Held {
      bytes = Map.copyOf(bytes);
    }
  }

  /**
   * No grant: the pod never met vgpu's scheduler, or what it carries is not the scheduler's grant.
   *
   * @param why in words, for the Event and the log line
   */
  record Ungranted(String why) implements Holding {}

  private final HookLayout layout;
  private final PodGrants grants;
  private final String node;
  private final @Nullable WholeCardGrants wholeCards;
  private WholeCardGrants.@Nullable View view;

  /** Grants on {@code node} under vgpu's own stack. */
  ContainerGrants(HookLayout layout, PodGrants grants, String node) {
    this(layout, grants, node, null);
  }

  /**
   * Grants on {@code node}.
   *
   * @param grants which pod grants are the scheduler's
   * @param wholeCards the whole cards containers hold, under KAI Scheduler; null under vgpu's own
   */
  ContainerGrants(HookLayout layout, PodGrants grants, String node, @Nullable WholeCardGrants wholeCards) {
    this.layout = layout;
    this.grants = grants;
    this.node = node;
    this.wholeCards = wholeCards;
  }

  /** Starts a poll: kubelet is asked again, at most once, when a container's whole cards are needed. */
  void newPoll() {
    view = wholeCards == null ? null : wholeCards.view();
  }

  /** What container {@code name} of {@code pod} holds. */
  Holding of(Pod pod, String name) {
    Optional<Limits> kai = file(() -> layout.kaiLimitsFile(pod.getMetadata().getUid(), name));
    if (kai.isPresent()) {
      return kai.get().readable() && kai.get().devices().isPresent() ? fromFile(kai.get()) : new Held(Map.of());
    }
    if (wholeCards != null) {
      if (view == null) {
        newPoll();
      }
      List<String> cards = view.of(pod, name);
      if (!cards.isEmpty()) {
        Map<String, Long> whole = new LinkedHashMap<>();
        cards.forEach(card -> whole.put(card, Long.MAX_VALUE));
        return new Held(whole);
      }
    }
    Optional<Limits> file = limitsFile(pod.getMetadata().getUid(), name);
    if (file.isPresent() && !file.get().readable()) {
      return new Held(Map.of());
    }
    if (file.isPresent() && file.get().devices().isPresent()) {
      return fromFile(file.get());
    }
    PodGrants.Held podGrant = grants.of(pod, node);
    if (!(podGrant instanceof PodGrants.Granted granted)) {
      if (file.isPresent()) {
        return new Held(Map.of()); // allocated here, but which cards it cannot tell: nothing
      }
      return new Ungranted(podGrant instanceof PodGrants.Refused r ? "its grant is not the scheduler's: " + r.why() : "the pod holds no GPU grant");
    }
    List<DeviceGrant> cards = cardsOf(pod, name, granted);
    Map<String, Long> out = new LinkedHashMap<>();
    for (int ordinal = 0; ordinal < cards.size(); ordinal++) {
      long bytes = cards.get(ordinal).memoryMiB() * MIB;
      if (file.isPresent()) {
        long cap = file.get().of(ordinal).orElse(0);
        bytes = cap == 0 ? bytes : Math.min(bytes, cap);
      }
      out.merge(cards.get(ordinal).uuid(), bytes, Math::min);
    }
    return new Held(out);
  }

  /** The node's own record: card {@code i} of the {@code # devices:} line holds limit {@code i}. */
  private static Held fromFile(Limits file) {
    List<String> cards = file.devices().orElseThrow();
    Map<String, Long> out = new LinkedHashMap<>();
    for (int ordinal = 0; ordinal < cards.size(); ordinal++) {
      long cap = file.of(ordinal).orElse(0);
      out.merge(cards.get(ordinal), cap == 0 ? Long.MAX_VALUE : cap, Math::min);
    }
    return new Held(out);
  }

  /** The container's cards in its pod's grant: none when the grant gives it none. */
  private static List<DeviceGrant> cardsOf(Pod pod, String name, PodGrants.Granted granted) {
    List<Container> containers = PodRefs.containers(pod);
    for (int c = 0; c < containers.size(); c++) {
      if (name.equals(containers.get(c).getName())) {
        return c < granted.perContainer().size() ? granted.perContainer().get(c) : List.of();
      }
    }
    return List.of();
  }

  private Optional<Limits> limitsFile(String podUid, String name) {
    return file(() -> layout.limitsFile(podUid, name));
  }

  private static Optional<Limits> file(Supplier<String> path) {
    Path file;
    try {
      file = Path.of(path.get());
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
   * @param devices the cards of the {@code # devices:} line in ordinal order, when the file has one
   */
  record Limits(Map<Integer, Long> byOrdinal, long all, boolean readable, Optional<List<String>> devices) {
    static final Limits UNREADABLE = new Limits(Map.of(), -1, false, Optional.empty());

    static Limits parse(String content) {
      Map<Integer, Long> byOrdinal = new HashMap<>();
      long all = -1;
      Optional<List<String>> devices = Optional.empty();
      for (String raw : content.split("\n")) {
        String line = raw.strip();
        if (raw.startsWith(NvidiaContainerContract.LIMITS_FILE_DEVICES)) {
          List<String> cards = List.of(raw.substring(NvidiaContainerContract.LIMITS_FILE_DEVICES.length()).strip().split(",", -1));
          if (devices.isPresent() || cards.stream().anyMatch(String::isBlank)) {
            return UNREADABLE;
          }
          devices = Optional.of(cards);
          continue;
        }
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
      return new Limits(byOrdinal, all, true, devices);
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
