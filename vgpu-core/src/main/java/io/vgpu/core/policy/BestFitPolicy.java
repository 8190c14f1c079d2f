package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementView;

/**
 * Best fit, as the FGD paper's baseline defines it: the node with the least capacity left after the
 * pod wins, and within it the card with the least idle share that still fits. A node's leftover is
 * {@code 0.5 * CPU left / 128 vCPU + 0.5 * card share left / 8 cards}, or the card term alone where CPU
 * is not modelled; the score is {@code floor(100 * (1 - leftover))}, on the 0..100 integer scale of a
 * Kubernetes score plug-in, so nodes within one point tie (and ties go to the earlier candidate).
 */
public final class BestFitPolicy implements PlacementPolicy {
  /** The policy's name. */
  public static final String NAME = "bestfit";

  /** The paper's normalizing node size: 128 vCPU. */
  static final double MAX_CPU_MILLI = 128_000;

  /** The paper's normalizing node size: 8 whole cards. */
  static final double MAX_CARD_SHARE = 8 * CardShares.WHOLE;

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    int n = node.deviceCount();
    double[] keys = CardOrder.keys(n);
    for (int d = 0; d < n; d++) {
      keys[d] = -CardShares.idle(node, d);
    }
    CardOrder.byDecreasingKey(keys, n, order);
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    double cardsLeft = 0;
    for (int d = 0; d < node.deviceCount(); d++) {
      cardsLeft += CardShares.idle(node, d);
    }
    for (int c = 0; c < placement.containers(); c++) {
      for (int i = 0; i < placement.cardCount(c); i++) {
        cardsLeft -= CardShares.demand(node, placement.card(c, i), placement.memoryMiB(c, i), placement.cores(c, i));
      }
    }
    long freeCpu = node.freeCpuMilli();
    // The paper's order of operations, so that scores on the integer boundaries floor the same way.
    double leftover = 0;
    if (freeCpu >= 0) {
      long cpuLeft = freeCpu - Math.max(0, placement.cpuMilli());
      leftover += cpuLeft / MAX_CPU_MILLI * 0.5;
      leftover += cardsLeft / MAX_CARD_SHARE * 0.5;
    } else {
      leftover = cardsLeft / MAX_CARD_SHARE;
    }
    return Math.floor((1.0 - leftover) * 100);
  }

  /** Registers {@code bestfit}. */
  public static final class Provider extends NamedProvider {
    /** The provider ServiceLoader instantiates. */
    public Provider() {
      super(NAME, BestFitPolicy::new);
    }
  }
}
