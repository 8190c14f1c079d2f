package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tasks a fragmentation-aware policy expects next: task classes with their popularity (weights
 * summing to 1). It measures how fragmented a node is: the node's idle card share, in milli-cards, that
 * a task drawn from this workload could not use ({@link #fragmentationOf}).
 *
 * <p>Immutable and safe to share; its fields are laid out in arrays for the policies' inner loops.
 */
public final class TargetWorkload {

  /** No task at all: nothing is ever fragmented. */
  public static final TargetWorkload EMPTY = new TargetWorkload(List.of(), new double[0]);

  private final List<WorkloadClass> classes;
  final int size;
  final double[] weight;
  final long[] cpuMilli;
  final int[] cards;
  final int[] memoryMiB;
  final int[] memoryPercent;
  final int[] cores;
  /**
   * Each class's share of one card in milli-cards, estimated from its compute or memory percentage
   * (an absolute memory amount says nothing without the card's size); 0 for CPU-only classes.
   */
  final double[] cardShare;
  /** Whether any class constrains card types (most workloads do not, which saves the type checks). */
  final boolean typed;
  private final double cpuPerCardShare;
  /** Per card type seen so far, whether each class accepts it. */
  private final ConcurrentHashMap<String, boolean[]> acceptance = new ConcurrentHashMap<>();

  private TargetWorkload(List<WorkloadClass> classes, double[] normalizedWeights) {
    this.classes = List.copyOf(classes);
    this.size = classes.size();
    this.weight = normalizedWeights;
    this.cpuMilli = new long[size];
    this.cards = new int[size];
    this.memoryMiB = new int[size];
    this.memoryPercent = new int[size];
    this.cores = new int[size];
    this.cardShare = new double[size];
    boolean anyTyped = false;
    for (int c = 0; c < size; c++) {
      WorkloadClass k = classes.get(c);
      CardDemand d = k.demand();
      cpuMilli[c] = k.cpuMilli();
      if (d != null) {
        cards[c] = d.count();
        // A card portion is modelled by what it is written as: a fixed share or a memory amount.
        memoryMiB[c] = d.portion() != null ? d.portion().memoryMiB() : d.memoryMiB();
        memoryPercent[c] = d.portion() != null ? d.portion().hundredths() : d.memoryPercent();
        cores[c] = d.cores();
        cardShare[c] = CardShares.WHOLE * Math.max(d.cores(), memoryPercent[c]) / 100;
      }
      anyTyped |= !k.cardTypes().isEmpty();
    }
    this.typed = anyTyped;
    double cpu = 0;
    double share = 0;
    for (int c = 0; c < size; c++) {
      if (cards[c] > 0) {
        cpu += weight[c] * cpuMilli[c];
        share += weight[c] * cards[c] * cardShare[c];
      }
    }
    this.cpuPerCardShare = share == 0 ? 0 : cpu / share;
  }

  /**
   * A workload of the given classes with the given relative weights (normalized here).
   *
   * @throws IllegalArgumentException when the lists differ in length, a weight is negative or not
   *     finite, or classes are given and all weights are zero
   */
  public static TargetWorkload of(List<WorkloadClass> classes, List<Double> weights) {
    if (classes.size() != weights.size()) {
      throw new IllegalArgumentException(classes.size() + " workload classes but " + weights.size() + " weights");
    }
    double sum = 0;
    for (double w : weights) {
      if (!(w >= 0) || Double.isInfinite(w)) {
        throw new IllegalArgumentException("workload weight " + w + " must be a finite non-negative number");
      }
      sum += w;
    }
    if (classes.isEmpty()) {
      return EMPTY;
    }
    if (sum == 0) {
      throw new IllegalArgumentException("workload weights are all zero");
    }
    double[] normalized = new double[weights.size()];
    for (int i = 0; i < normalized.length; i++) {
      normalized[i] = weights.get(i) / sum;
    }
    return new TargetWorkload(classes, normalized);
  }

  /**
   * The FGD paper's "typical pods": the most popular classes, taken in order of decreasing count until
   * they cover {@code popularityPercent} of all tasks, with weights renormalized over the kept ones.
   * Classes with equal counts are taken in decreasing {@link WorkloadClass} order, as the paper's
   * simulator does.
   *
   * @param counts how many tasks of each class were seen
   * @param popularityPercent the share of tasks to cover, in (0, 100]; the paper uses 95
   */
  public static TargetWorkload typical(Map<WorkloadClass, ? extends Number> counts, double popularityPercent) {
    if (!(popularityPercent > 0 && popularityPercent <= 100)) {
      throw new IllegalArgumentException("popularity threshold " + popularityPercent + " must be in (0, 100]");
    }
    List<Map.Entry<WorkloadClass, ? extends Number>> entries = new ArrayList<>(counts.entrySet());
    entries.removeIf(e -> e.getValue().doubleValue() <= 0);
    entries.sort(
        Comparator.<Map.Entry<WorkloadClass, ? extends Number>>comparingDouble(e -> e.getValue().doubleValue())
            .thenComparing(Map.Entry::getKey)
            .reversed());
    double total = 0;
    for (Map.Entry<WorkloadClass, ? extends Number> e : entries) {
      total += e.getValue().doubleValue();
    }
    double expected = popularityPercent * total / 100.0;
    List<WorkloadClass> kept = new ArrayList<>();
    List<Double> weights = new ArrayList<>();
    double covered = 0;
    for (int i = 0; i < entries.size() && covered < expected; i++) {
      kept.add(entries.get(i).getKey());
      double count = entries.get(i).getValue().doubleValue();
      weights.add(count);
      covered += count;
    }
    return of(kept, weights);
  }

  /**
   * CPU the workload's card-using tasks need per milli-card they take, in millicores: what a node's idle
   * cards will ask of its CPU. 0 when the workload has no CPU or no card demand.
   */
  public double cpuPerCardShare() {
    return cpuPerCardShare;
  }

  /** For a card type, whether each class (by position) accepts it; computed once per type. */
  boolean[] acceptance(String type) {
    boolean[] row = acceptance.get(type);
    if (row == null) {
      boolean[] computed = new boolean[size];
      for (int c = 0; c < size; c++) {
        computed[c] = classes.get(c).acceptsType(type);
      }
      row = acceptance.computeIfAbsent(type, t -> computed);
    }
    return row;
  }

  /** The classes, in the order they were given. */
  public List<WorkloadClass> classes() {
    return classes;
  }

  /** The normalized weight (popularity) of class {@code i}. */
  public double weight(int i) {
    return weight[i];
  }

  /**
   * The node's fragmentation under this workload, F_n(M) in the FGD paper: the expected idle card
   * share, in milli-cards, that the next task could not use. A task that does not fit on the node at
   * all (too few cards with room, too little CPU, no card of an accepted type) or uses no card leaves
   * all of the node's idle share unusable; a task that fits leaves unusable the cards it could not use.
   */
  public double fragmentationOf(NodeView node) {
    NodeFragmentation meter = NodeFragmentation.local();
    meter.load(node, this);
    return meter.fragmentation();
  }
}
