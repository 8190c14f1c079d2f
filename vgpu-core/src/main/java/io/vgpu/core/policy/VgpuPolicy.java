package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementView;
import io.vgpu.api.spi.PodDemand;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * vgpu's placement policy: place each pod where it least increases the idle card share that future
 * tasks will not be able to use, counting three ways a share becomes unusable.
 *
 * <ol>
 *   <li><b>Fragmentation</b>, as FGD measures it: the idle share the target workload's next task could
 *       not use (F_n(M), see {@link TargetWorkload#fragmentationOf}).
 *   <li><b>Stranding</b>: idle cards whose node lacks the CPU to feed them. The workload's card-using
 *       tasks need κ millicores per milli-card ({@link TargetWorkload#cpuPerCardShare}); a node with
 *       idle share I and free CPU C strands {@code max(0, I − C/κ)}. FGD counts a node's CPU only
 *       when the very next task would not fit; counting what its cards will need keeps CPU-hungry
 *       pods off CPU-tight nodes, and CPU-light pods on them, long before that.
 *   <li><b>Contention</b> for card types: taking a share of a type that type-constrained tasks will need
 *       (see {@link TypeContention}) costs that share times the type's contention.
 * </ol>
 *
 * <p>The node score is the decrease of their sum, in milli-cards, rounded to a thousandth so that
 * nodes in the same situation tie exactly and ties go to the earlier candidate; unlike FGD's it is not
 * quantized to 0..100, which would hide differences of tens of milli-cards. Cards are tried in order of
 * the same decrease for one card, then the fullest first.
 *
 * <p>Deployed in the engine (the provider's instance), it learns all three from the cluster: the target
 * workload from the pods the engine counts, each once, with their CPU requests and the card types
 * their constraints allow ({@link #observe(PodDemand)}); the cards of each type from the nodes'
 * registrations ({@link #cardTypesRegistered}); and each node's free CPU from the node view, which the
 * engine's embedder feeds ({@code Engine.setNodeCpu}, {@code Engine.setPodCpu}). Where CPU is not
 * modelled ({@link NodeView#freeCpuMilli()} is -1) stranding is 0; where no pod insists on a card type
 * contention is 0.
 */
public final class VgpuPolicy implements PlacementPolicy {
  /** The policy's name. */
  public static final String NAME = "vgpu";

  /** What the policy measures against, swapped whole so that a score never mixes two states. */
  private record Model(TargetWorkload workload, TypeContention contention) {}

  private final WorkloadModel workload;
  /** Whether contention follows the cluster's registrations (else it was given with the workload). */
  private final boolean followsRegistrations;
  private Map<String, Long> cardsByType = Map.of();
  /** {@code null} when an observation or a registration has changed what it is made of since. */
  private volatile @Nullable Model model;

  /** The policy against a target workload learned from the pods the engine counts. */
  public VgpuPolicy() {
    this.workload = WorkloadModel.learned();
    this.followsRegistrations = true;
    this.model = new Model(TargetWorkload.EMPTY, TypeContention.NONE);
  }

  /**
   * The policy against a fixed target workload; the contention of card types follows the cards the
   * cluster registers ({@link #cardTypesRegistered}).
   */
  public VgpuPolicy(TargetWorkload workload) {
    this.workload = WorkloadModel.fixed(workload);
    this.followsRegistrations = true;
    this.model = new Model(workload, TypeContention.NONE);
  }

  /**
   * The policy against a fixed target workload on a cluster with the given number of cards of each
   * type, from which it derives how contended each type is; registrations change neither.
   */
  public VgpuPolicy(TargetWorkload workload, Map<String, Long> cardsByType) {
    this.workload = WorkloadModel.fixed(workload);
    this.followsRegistrations = false;
    this.model = new Model(workload, TypeContention.of(workload, cardsByType));
  }

  @Override
  public String name() {
    return NAME;
  }

  /** The target workload the policy measures against now. */
  public TargetWorkload workload() {
    return model().workload();
  }

  /** How contended a card type is now: 0 when nothing insists on it, at most 1. */
  public double contention(String cardType) {
    return model().contention().of(cardType);
  }

  @Override
  public void observe(CardDemand demand) {
    observe(new PodDemand(-1, List.of(demand), List.of()));
  }

  @Override
  public void observe(PodDemand pod) {
    if (!workload.learning()) {
      return;
    }
    synchronized (this) {
      workload.observe(pod);
      markStale();
    }
  }

  @Override
  public void cardTypesRegistered(Map<String, Long> cards) {
    if (!followsRegistrations) {
      return;
    }
    synchronized (this) {
      this.cardsByType = Map.copyOf(cards);
      markStale();
    }
  }

  /** Marks the model stale (holding the lock): it is worked out again when a score next needs it. */
  private void markStale() {
    model = null;
  }

  /**
   * The model for the current workload and cards. Worked out on first use after a change, not at each
   * pod the engine counts: a policy that is loaded but not chosen would otherwise pay for every pod.
   */
  private Model model() {
    Model known = model;
    if (known != null) {
      return known;
    }
    synchronized (this) {
      if (model == null) {
        TargetWorkload current = workload.current();
        model = new Model(current, TypeContention.of(current, cardsByType));
      }
      return model;
    }
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    Model m = model();
    double[] keys = CardOrder.keys(node.deviceCount());
    NodeFragmentation meter = NodeFragmentation.local();
    int n = meter.decreasesPerCard(node, m.workload(), demand, keys);
    for (int d = 0; d < n; d++) {
      if (Double.isNaN(keys[d])) {
        keys[d] = Double.NEGATIVE_INFINITY;
        continue;
      }
      double taken = CardShares.demand(node, d, demand.memoryOn(meter.totalMemory(d)), demand.cores());
      double decrease = keys[d] - m.contention().of(node.type(d)) * taken;
      // Idle share is at most 1000, so this tie-break stays below the rounding step of the decrease.
      keys[d] = roundToThousandth(decrease) - meter.idle(d) * 1e-7;
    }
    CardOrder.byDecreasingKey(keys, n, order);
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    Model m = model();
    TargetWorkload target = m.workload();
    NodeFragmentation meter = NodeFragmentation.local();
    meter.load(node, target);
    double decrease = meter.fragmentation() - meter.fragmentationAfter(placement);
    double taken = 0;
    for (int c = 0; c < placement.containers(); c++) {
      for (int i = 0; i < placement.cardCount(c); i++) {
        int d = placement.card(c, i);
        double share = CardShares.demand(node, d, placement.memoryMiB(c, i), placement.cores(c, i));
        taken += share;
        decrease -= m.contention().of(node.type(d)) * share;
      }
    }
    long freeCpu = node.freeCpuMilli();
    double cpuPerShare = target.cpuPerCardShare();
    if (freeCpu >= 0 && cpuPerShare > 0) {
      double idle = meter.totalIdle();
      long cpuTaken = Math.max(0, placement.cpuMilli());
      decrease += stranded(idle, freeCpu, cpuPerShare) - stranded(idle - taken, freeCpu - cpuTaken, cpuPerShare);
    }
    return roundToThousandth(decrease);
  }

  /** Idle share the node's free CPU cannot feed, at {@code cpuPerShare} millicores per milli-card. */
  static double stranded(double idle, long freeCpu, double cpuPerShare) {
    return Math.max(0, idle - freeCpu / cpuPerShare);
  }

  private static double roundToThousandth(double value) {
    return Math.rint(value * 1000) / 1000;
  }

  /** Registers {@code vgpu}, learning its target workload and card types from the cluster. */
  public static final class Provider extends NamedProvider {
    /** The provider ServiceLoader instantiates. */
    public Provider() {
      super(NAME, VgpuPolicy::new);
    }
  }
}
