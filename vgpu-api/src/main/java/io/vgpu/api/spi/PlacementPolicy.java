package io.vgpu.api.spi;

import java.util.Map;

/**
 * Decides where a pod goes: which of a node's cards a container tries first, and how good a node is.
 * The engine walks the cards in the policy's order, taking each card that passes every check until the
 * container has enough, then picks the node with the highest score (ties go to the candidate listed
 * first). Policies are called concurrently and on the hot path: they must be thread-safe and should not
 * allocate.
 */
public interface PlacementPolicy {

  /** The policy's name, e.g. {@code binpack}, {@code spread} or {@code fgd}. */
  String name();

  /**
   * Writes into {@code order[0..node.deviceCount())} the positions of the node's cards in the order
   * the fit walk should try them for one container.
   *
   * @param node the node with its current usage (including earlier containers of the same pod)
   * @param demand what the container needs from each card
   * @param order receives a permutation of {@code 0..node.deviceCount()-1}
   */
  void rankCards(NodeView node, CardDemand demand, int[] order);

  /**
   * Scores a node on which the whole pod fits; the engine picks the highest score.
   *
   * @param node the node with its usage before the pod is placed
   * @param placement the cards the pod would take on it
   * @return the score; only comparisons between nodes matter
   */
  double scoreNode(NodeView node, PlacementView placement);

  /**
   * Whether {@link #scoreNode} ignores its placement argument. The engine then need not work out the
   * cards a pod would take on every node, only on the winner, which makes filtering much cheaper.
   */
  default boolean scoresNodeUsageOnly() {
    return false;
  }

  /**
   * Tells the policy what the cluster runs, so that policies which learn the workload (as
   * fragmentation-aware ones do) can update what they expect: the engine calls it once per pod, when
   * the pod's grant is reserved or restored, with the demand of each of its app containers that takes
   * cards; never for a mere filter call. The default ignores it.
   */
  default void observe(CardDemand demand) {}

  /**
   * Tells the policy about one pod the engine counted, once per pod, when its grant is reserved or
   * restored (never for a mere filter call): its CPU, the per-card demand of each app container that
   * takes cards, and the registered card types it may use. A policy that learns its workload overrides
   * this to learn all of it; the default passes each card demand to {@link #observe(CardDemand)}.
   */
  default void observe(PodDemand pod) {
    for (CardDemand demand : pod.cards()) {
      observe(demand);
    }
  }

  /**
   * Tells the policy how many cards of each type the cluster has registered, by the types' registered
   * names: the engine calls it when the policy is created and whenever a node's registration changes
   * the counts, never concurrently with itself. The default ignores it.
   *
   * @param cardsByType an immutable map from card type to the number of registered cards of that type
   */
  default void cardTypesRegistered(Map<String, Long> cardsByType) {}
}
