package io.vgpu.core.policy;

import io.vgpu.api.spi.NodeView;

/**
 * A card's capacity reduced to one number, its share in milli-cards (1000 = the whole card), as the
 * fragmentation measure and best-fit count it: memory and compute are separate in HAMi, so a card is as
 * free as its scarcer dimension, and a demand is as large as its larger one.
 */
final class CardShares {
  static final double WHOLE = 1000.0;

  private CardShares() {}

  /** The idle share of a card with the given free and total memory and compute. */
  static double idle(int freeMemory, int totalMemory, int freeCores, int totalCores) {
    if (totalMemory <= 0 || freeMemory <= 0) {
      return 0;
    }
    // Multiplying before dividing keeps whole milli values exact, so sums and differences of shares are.
    double share = WHOLE * freeMemory / totalMemory;
    if (totalCores > 0) {
      share = Math.min(share, Math.max(0, WHOLE * freeCores / totalCores));
    }
    return share;
  }

  /** The idle share of card {@code d}, or 0 when it takes no new work. */
  static double idle(NodeView node, int d) {
    if (!node.schedulable(d)) {
      return 0;
    }
    return idle(
        node.totalMemoryMiB(d) - node.usedMemoryMiB(d),
        node.totalMemoryMiB(d),
        node.totalCores(d) - node.usedCores(d),
        node.totalCores(d));
  }

  /** The share of card {@code d} that a grant of {@code memoryMiB} and {@code cores} takes. */
  static double demand(NodeView node, int d, int memoryMiB, int cores) {
    int totalMemory = node.totalMemoryMiB(d);
    int totalCores = node.totalCores(d);
    double share = totalMemory > 0 ? WHOLE * memoryMiB / totalMemory : 0;
    if (totalCores > 0) {
      share = Math.max(share, WHOLE * cores / totalCores);
    }
    return share;
  }
}
