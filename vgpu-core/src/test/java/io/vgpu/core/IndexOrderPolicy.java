package io.vgpu.core;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PlacementView;
import java.util.function.Supplier;

/**
 * A test policy that tries cards in index order and scores every node 0; tests override what they
 * listen to or record.
 */
public abstract class IndexOrderPolicy implements PlacementPolicy {
  private final String name;

  protected IndexOrderPolicy(String name) {
    this.name = name;
  }

  /** A provider named {@code name} handing out a fresh policy from {@code create} each time. */
  public static PlacementPolicyProvider provider(String name, Supplier<PlacementPolicy> create) {
    return new PlacementPolicyProvider() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public PlacementPolicy create() {
        return create.get();
      }
    };
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    for (int d = 0; d < node.deviceCount(); d++) {
      order[d] = d;
    }
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    return 0;
  }
}
