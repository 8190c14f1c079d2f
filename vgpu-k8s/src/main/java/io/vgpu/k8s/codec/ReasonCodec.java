package io.vgpu.k8s.codec;

import io.vgpu.api.FitReason;
import io.vgpu.core.NodeRejection;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The scheduler's per-node failure strings, HAMi's {@code GenReason}/{@code ParseReason}: each failed
 * check renders as {@code "<count>/<cards> <Reason>"}, the rendered strings are sorted as plain strings
 * and joined with {@code ", "}, e.g. {@code "1/2 CardInsufficientMemory, 1/2 CardUuidMismatch"}. A node
 * with fewer cards than asked for says the bare word {@code NodeInsufficientDevice}, a node the
 * scheduler does not know {@code node unregistered}, and a node the pod's node selector excludes
 * {@code NodeSelectorMismatch}.
 */
public final class ReasonCodec {
  /** A node with fewer cards than one container asks for. */
  public static final String NODE_INSUFFICIENT_DEVICE = FitReason.NODE_INSUFFICIENT_DEVICE.word();
  /** A node that has registered no devices. */
  public static final String NODE_UNREGISTERED = "node unregistered";
  /** A node the pod's node selector or required node affinity excludes. */
  public static final String NODE_SELECTOR_MISMATCH = "NodeSelectorMismatch";

  private ReasonCodec() {}

  /** Renders why a pod does not fit on a node. */
  public static String render(NodeRejection rejection) {
    return switch (rejection.kind()) {
      case INSUFFICIENT_DEVICES -> NODE_INSUFFICIENT_DEVICE;
      case UNREGISTERED -> NODE_UNREGISTERED;
      case DEVICES -> {
        Map<String, Integer> counts = new LinkedHashMap<>();
        rejection.counts().forEach((reason, count) -> counts.put(reason.word(), count));
        yield render(counts, rejection.cards());
      }
    };
  }

  /**
   * Renders the rejections of one scan, each distinct reason once: thousands of nodes fail for a
   * handful of reasons, and rendering one builds a map, a list and several strings. Not thread-safe.
   */
  public static final class Renderer {
    private final Map<Reason, String> rendered = new HashMap<>();

    /** As {@link ReasonCodec#render(NodeRejection)}, the same string for rejections that say the same. */
    public String render(NodeRejection rejection) {
      if (rejection.kind() != NodeRejection.Kind.DEVICES) {
        return ReasonCodec.render(rejection);
      }
      return rendered.computeIfAbsent(new Reason(rejection.counts(), rejection.cards()), r -> ReasonCodec.render(rejection));
    }

    /** What a {@link NodeRejection.Kind#DEVICES} rejection's string is made of. */
    private record Reason(Map<FitReason, Integer> counts, int cards) {}
  }

  /** Renders reason words with their counts out of {@code cards}. */
  public static String render(Map<String, Integer> counts, int cards) {
    List<String> parts = new ArrayList<>(counts.size());
    counts.forEach((reason, count) -> parts.add(count + "/" + cards + " " + reason));
    parts.sort(null);
    return String.join(", ", parts);
  }

  /**
   * Parses a rendered string into reason words and counts, as HAMi's {@code ParseReason} does: entries
   * that are not {@code "<count>/<cards> <Reason>"} (such as the bare {@code NodeInsufficientDevice})
   * are skipped.
   */
  public static Map<String, Integer> parse(String value) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (String part : value.split(", ")) {
      Counted c = counted(part);
      if (c != null) {
        counts.put(c.reason, c.count);
      }
    }
    return counts;
  }

  /**
   * Parses a rendered string back into the rejection it was rendered from.
   *
   * @param node the node the string is about
   * @throws IllegalArgumentException when the string names a reason vgpu does not know, or its entries
   *     disagree on the number of cards
   */
  public static NodeRejection toRejection(String node, String value) {
    if (value.equals(NODE_INSUFFICIENT_DEVICE)) {
      return new NodeRejection(node, NodeRejection.Kind.INSUFFICIENT_DEVICES, Map.of(), 0);
    }
    if (value.equals(NODE_UNREGISTERED)) {
      return new NodeRejection(node, NodeRejection.Kind.UNREGISTERED, Map.of(), 0);
    }
    Map<FitReason, Integer> counts = new EnumMap<>(FitReason.class);
    int cards = -1;
    for (String part : value.split(", ")) {
      Counted c = counted(part);
      if (c == null) {
        throw new IllegalArgumentException("'" + part + "' is not '<count>/<cards> <Reason>'");
      }
      if (cards >= 0 && cards != c.cards) {
        throw new IllegalArgumentException("'" + value + "' counts out of both " + cards + " and " + c.cards + " cards");
      }
      cards = c.cards;
      counts.put(reasonOf(c.reason), c.count);
    }
    return new NodeRejection(node, NodeRejection.Kind.DEVICES, counts, Math.max(cards, 0));
  }

  private static FitReason reasonOf(String word) {
    for (FitReason r : FitReason.values()) {
      if (r.word().equals(word)) {
        return r;
      }
    }
    throw new IllegalArgumentException("unknown reason '" + word + "'");
  }

  private record Counted(int count, int cards, String reason) {}

  private static Counted counted(String part) {
    int slash = part.indexOf('/');
    int space = part.indexOf(' ', slash + 1);
    if (slash <= 0 || space < 0) {
      return null;
    }
    try {
      int count = Integer.parseInt(part.substring(0, slash));
      int cards = Integer.parseInt(part.substring(slash + 1, space));
      String reason = part.substring(space + 1).trim();
      int end = reason.indexOf(' ');
      return new Counted(count, cards, end < 0 ? reason : reason.substring(0, end));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
