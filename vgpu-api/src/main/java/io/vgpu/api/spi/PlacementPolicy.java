package io.vgpu.api.spi;

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
}
