package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementView;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Places a pod on a uniformly random node that fits, on uniformly random cards that fit: every node
 * gets an independent random score, and cards are tried in a random order. The baseline every other
 * policy should beat. Seeded, so a single-threaded sequence of decisions is reproducible; lock-free
 * and allocation-free.
 */
public final class RandomPolicy implements PlacementPolicy {
  /** The policy's name. */
  public static final String NAME = "random";

  /** The seed the registered provider uses. */
  public static final long DEFAULT_SEED = 42;

  private static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

  private final AtomicLong state;

  /** A policy whose decisions follow from {@code seed}. */
  public RandomPolicy(long seed) {
    this.state = new AtomicLong(seed);
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    int n = node.deviceCount();
    for (int d = 0; d < n; d++) {
      order[d] = d;
    }
    for (int i = n - 1; i > 0; i--) {
      int j = nextInt(i + 1);
      int swap = order[i];
      order[i] = order[j];
      order[j] = swap;
    }
  }

  /** The score ignores the placement, so the engine need not work one out on every node. */
  @Override
  public boolean scoresNodeUsageOnly() {
    return true;
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    return (nextLong() >>> 11) * 0x1.0p-53;
  }

  /** A uniform integer in {@code [0, bound)}. */
  private int nextInt(int bound) {
    return (int) (((nextLong() >>> 33) * bound) >>> 31);
  }

  /** SplitMix64 over an atomic counter: each call takes the next value of a Weyl sequence and mixes it. */
  private long nextLong() {
    long z = state.addAndGet(GOLDEN_GAMMA);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Registers {@code random} with the default seed. */
  public static final class Provider extends NamedProvider {
    /** The provider ServiceLoader instantiates. */
    public Provider() {
      super(NAME, () -> new RandomPolicy(DEFAULT_SEED));
    }
  }
}
