package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementView;
import io.vgpu.api.spi.PodDemand;

/**
 * Fragmentation gradient descent (Weng et al., "Beware of Fragmentation", USENIX ATC '23): place each
 * pod where it least increases the expected idle card share that the target workload could not use.
 *
 * <p>As the paper's plug-in computes it: with Δ = F_n(M) − F_n'(M) in milli-cards (negative when
 * fragmentation grows), a node scores {@code floor(100 * sigmoid(Δ / 1000))} on Kubernetes' 0..100
 * scale, so nodes within a point (about 40 milli-cards near Δ = 0) tie; the cards a container tries
 * first are those with the best such score, lower positions first among ties, which for whole cards is
 * the lowest-index free ones.
 *
 * <p>The target workload is fixed when given (the trace's typical tasks in the placement benchmark),
 * or else learned from the pods the engine counts, with their CPU requests and the card types their
 * constraints allow ({@link #observe(PodDemand)}). A node's CPU counts where the engine's embedder
 * models it ({@link NodeView#freeCpuMilli()}).
 */
public final class FgdPolicy implements PlacementPolicy {
  /** The policy's name. */
  public static final String NAME = "fgd";

  private final WorkloadModel workload;

  /** FGD against a target workload learned from observed requests. */
  public FgdPolicy() {
    this.workload = WorkloadModel.learned();
  }

  /** FGD against a fixed target workload. */
  public FgdPolicy(TargetWorkload workload) {
    this.workload = WorkloadModel.fixed(workload);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** The target workload the policy measures fragmentation against now. */
  public TargetWorkload workload() {
    return workload.current();
  }

  @Override
  public void observe(CardDemand demand) {
    workload.observe(demand);
  }

  @Override
  public void observe(PodDemand pod) {
    workload.observe(pod);
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    double[] keys = CardOrder.keys(node.deviceCount());
    int n = NodeFragmentation.local().decreasesPerCard(node, workload.current(), demand, keys);
    for (int d = 0; d < n; d++) {
      keys[d] = Double.isNaN(keys[d]) ? -1 : score(keys[d]);
    }
    CardOrder.byDecreasingKey(keys, n, order);
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    NodeFragmentation meter = NodeFragmentation.local();
    meter.load(node, workload.current());
    return score(meter.fragmentation() - meter.fragmentationAfter(placement));
  }

  /** The paper's node score for a fragmentation decrease of {@code delta} milli-cards. */
  static double score(double delta) {
    // The plug-in's own arithmetic, sigmoid first and then scaled, so that ties fall where its do.
    double sigmoid = 1.0 / (1.0 + Math.exp(-(delta / 1000.0)));
    return Math.floor(sigmoid * 100);
  }

  /** Registers {@code fgd}, learning its target workload from the pods the engine counts. */
  public static final class Provider extends NamedProvider {
    /** The provider ServiceLoader instantiates. */
    public Provider() {
      super(NAME, FgdPolicy::new);
    }
  }
}
