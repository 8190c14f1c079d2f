package io.vgpu.core;

import io.vgpu.api.FitReason;
import java.util.AbstractMap;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Why a pod does not fit on one node.
 *
 * @param node the node
 * @param kind what kind of failure it is
 * @param counts for {@link Kind#DEVICES}: how many of the node's cards failed each check
 * @param cards the number of cards the node has
 */
public record NodeRejection(String node, Kind kind, Map<FitReason, Integer> counts, int cards) {

  /** The kinds of node rejection. */
  public enum Kind {
    /** The node's cards failed the checks counted in {@link NodeRejection#counts()}. */
    DEVICES,
    /** The node has fewer cards than one container asks for (HAMi's bare {@code NodeInsufficientDevice}). */
    INSUFFICIENT_DEVICES,
    /** The engine does not know the node (HAMi's {@code node unregistered}). */
    UNREGISTERED
  }

  /** Copies the counts, unless they are another rejection's (immutable already: a scan shares them). */
  public NodeRejection {
    counts = counts.isEmpty() ? Map.of() : counts instanceof Counts ? counts : new Counts(new EnumMap<>(counts));
  }

  /** A rejection's counts: an enum map nobody else holds, read-only, in the reasons' order. */
  private static final class Counts extends AbstractMap<FitReason, Integer> {
    private final Map<FitReason, Integer> counts;

    Counts(EnumMap<FitReason, Integer> counts) {
      this.counts = Collections.unmodifiableMap(counts);
    }

    @Override
    public Set<Map.Entry<FitReason, Integer>> entrySet() {
      return counts.entrySet();
    }

    @Override
    public @Nullable Integer get(Object reason) {
      return counts.get(reason);
    }

    @Override
    public boolean containsKey(Object reason) {
      return counts.containsKey(reason);
    }

    @Override
    public int size() {
      return counts.size();
    }
  }

  static NodeRejection unregistered(String node) {
    return new NodeRejection(node, Kind.UNREGISTERED, Map.of(), 0);
  }
}
