package io.vgpu.api.spi;

import java.util.List;

/**
 * What one pod the engine counted asked for, as a {@link PlacementPolicy} that learns its workload
 * observes it: the CPU it requests, the per-card demand of each app container that takes cards, and
 * the card types it may use.
 *
 * @param cpuMilli CPU the pod requests in millicores, or -1 when it is not known (a grant restored
 *     without its request, an embedder that does not model CPU)
 * @param cards the per-card demand of each app container that takes cards, in container order; at
 *     least one
 * @param cardTypes the registered card types the pod may use, by their registered names, when its
 *     type constraints rule some out; empty when it may use every registered type
 */
public record PodDemand(long cpuMilli, List<CardDemand> cards, List<String> cardTypes) {

  /** Copies the lists and validates the fields. */
  public PodDemand {
    if (cpuMilli < -1) {
      throw new IllegalArgumentException("pod demand cpu " + cpuMilli + " millicores is negative");
    }
    cards = List.copyOf(cards);
    if (cards.isEmpty()) {
      throw new IllegalArgumentException("pod demand has no card demand");
    }
    cardTypes = List.copyOf(cardTypes);
  }

  /** Whether the pod's CPU request is known. */
  public boolean knowsCpu() {
    return cpuMilli >= 0;
  }
}
