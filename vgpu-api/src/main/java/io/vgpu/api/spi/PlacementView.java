package io.vgpu.api.spi;

/**
 * A candidate placement of one pod on one node, as a {@link PlacementPolicy} scores it: for each
 * container that takes cards, which cards (positions in the {@link NodeView}) and how much of each.
 * Implementations answer without allocating.
 */
public interface PlacementView {

  /** Number of containers that take cards. */
  int containers();

  /** Number of cards container {@code c} takes. */
  int cardCount(int c);

  /** Position in the node view of the {@code i}-th card of container {@code c}. */
  int card(int c, int i);

  /** Memory in MiB the {@code i}-th card of container {@code c} gives it. */
  int memoryMiB(int c, int i);

  /** Compute units the {@code i}-th card of container {@code c} gives it. */
  int cores(int c, int i);

  /** CPU the pod takes in millicores, or -1 when CPU is not modelled. */
  default long cpuMilli() {
    return -1;
  }
}
