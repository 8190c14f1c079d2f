package io.vgpu.core;

import io.vgpu.api.FitReason;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

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

  /** Copies the counts. */
  public NodeRejection {
    counts = counts.isEmpty() ? Map.of() : Collections.unmodifiableMap(new EnumMap<>(counts));
  }

  static NodeRejection unregistered(String node) {
    return new NodeRejection(node, Kind.UNREGISTERED, Map.of(), 0);
  }
}
