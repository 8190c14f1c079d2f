package io.vgpu.bench.placement;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.core.policy.TargetWorkload;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * One run of the protocol: one policy, one seed. Pods arrive one at a time; each goes to the node with
 * the highest score among those it fits on (ties to the earlier node of a seeded random order), on the
 * GPUs the policy ranks first, or fails for good. After every pod the run records the GPU share
 * arrived, allocated and fragmented.
 *
 * <p>Speed comes from remembering each node's score per pod shape (CPU, share, GPU count) until the
 * node changes, for policies whose scores depend on nothing else, and from updating fragmentation only
 * for the node a pod lands on.
 */
final class Simulation {
  private static final int MAX_MEMO_SLOTS = 256;

  private final SimCluster cluster;
  private final SimCluster.View view;
  private final SimPlacement placement = new SimPlacement();
  private final PlacementPolicy policy;
  private final boolean memoize;
  private final boolean usageOnly;
  private final TargetWorkload typical;
  private final int[] nodeOrder;
  private final int[] cardOrder = new int[1024];

  // Per node: a version bumped on every change, and a direct-mapped memo of scores by pod shape.
  private final int[] nodeVersion;
  private final int slotMask;
  private final int[] memoShape;
  private final int[] memoVersion;
  private final double[] memoScore;
  private final double[] nodeFragmentation;

  private Simulation(SimCluster cluster, int[] nodeOrder, PlacementPolicy policy, boolean memoize, TargetWorkload typical, int shapes) {
    this.cluster = cluster;
    this.view = cluster.view();
    this.policy = policy;
    this.memoize = memoize;
    this.usageOnly = policy.scoresNodeUsageOnly();
    this.typical = typical;
    this.nodeOrder = nodeOrder;
    int n = cluster.nodeCount;
    this.nodeVersion = new int[n];
    int slots = Integer.highestOneBit(Math.max(1, Math.min(shapes, MAX_MEMO_SLOTS)) * 2 - 1);
    this.slotMask = slots - 1;
    this.memoShape = new int[n * slots];
    this.memoVersion = new int[n * slots];
    this.memoScore = new double[n * slots];
    java.util.Arrays.fill(memoVersion, -1);
    this.nodeFragmentation = new double[n];
    for (int i = 0; i < n; i++) {
      nodeFragmentation[i] = typical.fragmentationOf(view.at(i));
    }
  }

  /**
   * Runs the protocol for one seed. The seed's random source is drawn from in a fixed order: the
   * shuffle, the inflation or deflation, the node order for ties, then the policy's own seed.
   *
   * @param trace the cluster and workload
   * @param entry the policy
   * @param inflate the target GPU request as a multiple of capacity
   * @param seed the seed
   */
  static SeedResult run(PreparedTrace trace, PolicyCatalog.Entry entry, double inflate, long seed) {
    long start = System.nanoTime();
    SplittableRandom random = new SplittableRandom(seed);
    SimCluster cluster = new SimCluster(trace.trace().nodes());
    List<TracePod> arrivals = Arrivals.of(trace.pods(), cluster.capacityMilli, inflate, random);
    int[] nodeOrder = tieOrder(trace.trace().nodes(), random);
    PlacementPolicy policy = entry.factory().create(trace, random.nextLong());
    Shapes shapes = new Shapes(arrivals);
    Simulation sim = new Simulation(cluster, nodeOrder, policy, entry.deterministic(), trace.typical(), shapes.count());
    Recorder recorder = new Recorder(arrivals.size(), sim.cluster.capacityMilli);
    long arrived = 0;
    for (int p = 0; p < arrivals.size(); p++) {
      TracePod pod = arrivals.get(p);
      arrived += pod.totalGpuMilli();
      sim.schedule(pod, shapes.id(p), shapes.demand(p));
      recorder.record(arrived, sim.cluster.usedMilli(), sim.clusterFragmentation());
    }
    double wallSeconds = (System.nanoTime() - start) / 1e9;
    return recorder.result(seed, wallSeconds);
  }

  /** Places one pod, or drops it when no node fits. */
  private void schedule(TracePod pod, int shape, CardDemand demand) {
    int best = -1;
    double bestScore = Double.NEGATIVE_INFINITY;
    for (int i : nodeOrder) {
      if (!cluster.fits(i, pod)) {
        continue;
      }
      double score = score(i, pod, shape, demand);
      if (score > bestScore) {
        best = i;
        bestScore = score;
      }
    }
    if (best < 0) {
      return;
    }
    choose(best, pod, demand);
    cluster.place(best, pod, placement.gpus());
    nodeVersion[best]++;
    nodeFragmentation[best] = typical.fragmentationOf(view.at(best));
  }

  private double score(int i, TracePod pod, int shape, CardDemand demand) {
    if (!memoize) {
      return evaluate(i, pod, demand);
    }
    int slot = i * (slotMask + 1) + (shape & slotMask);
    if (memoVersion[slot] == nodeVersion[i] && memoShape[slot] == shape) {
      return memoScore[slot];
    }
    double score = evaluate(i, pod, demand);
    memoShape[slot] = shape;
    memoVersion[slot] = nodeVersion[i];
    memoScore[slot] = score;
    return score;
  }

  private double evaluate(int i, TracePod pod, CardDemand demand) {
    if (usageOnly) {
      placement.reset(pod);
    } else {
      choose(i, pod, demand);
    }
    return policy.scoreNode(view.at(i), placement);
  }

  /** Fills {@link #placement} with the GPUs the policy's card order gives the pod on node {@code i}. */
  private void choose(int i, TracePod pod, CardDemand demand) {
    placement.reset(pod);
    int need = pod.gpus();
    if (need == 0) {
      return;
    }
    policy.rankCards(view.at(i), demand, cardOrder);
    int share = pod.gpuMilli();
    for (int k = 0, n = cluster.gpuCount[i]; k < n && need > 0; k++) {
      int d = cardOrder[k];
      if (cluster.gpuHasRoom(i, d, share)) {
        placement.add(d);
        need--;
      }
    }
    if (need > 0) {
      throw new IllegalStateException("pod " + pod.name() + " fitted node " + cluster.names[i] + " but its GPUs ran out");
    }
  }

  private double clusterFragmentation() {
    double sum = 0;
    for (double f : nodeFragmentation) {
      sum += f;
    }
    return sum;
  }

  /** Nodes sorted by name, then ranked by a seeded random permutation: the order ties are broken in. */
  static int[] tieOrder(List<TraceNode> nodes, SplittableRandom random) {
    Integer[] byName = IntStream.range(0, nodes.size()).boxed().toArray(Integer[]::new);
    java.util.Arrays.sort(byName, Comparator.comparing(i -> nodes.get(i).name()));
    int[] rank = IntStream.range(0, nodes.size()).toArray();
    for (int i = rank.length - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int swap = rank[i];
      rank[i] = rank[j];
      rank[j] = swap;
    }
    int[] order = new int[nodes.size()];
    for (int k = 0; k < byName.length; k++) {
      order[rank[k]] = byName[k];
    }
    return order;
  }

  /** Pod shapes as the policies see them (CPU, GPU share, GPU count), numbered most popular first. */
  private static final class Shapes {
    private final int[] ids;
    private final CardDemand[] demands;
    private final int count;

    Shapes(List<TracePod> arrivals) {
      Map<List<Long>, Integer> popularity = new HashMap<>();
      for (TracePod p : arrivals) {
        popularity.merge(key(p), 1, Integer::sum);
      }
      List<List<Long>> ranked = popularity.keySet().stream()
          .sorted(Comparator.<List<Long>>comparingInt(popularity::get).reversed().thenComparing(Object::toString))
          .toList();
      Map<List<Long>, Integer> idOf = new HashMap<>();
      for (List<Long> k : ranked) {
        idOf.put(k, idOf.size());
      }
      ids = new int[arrivals.size()];
      demands = new CardDemand[arrivals.size()];
      Map<Integer, CardDemand> demandOf = new HashMap<>();
      for (int p = 0; p < arrivals.size(); p++) {
        TracePod pod = arrivals.get(p);
        ids[p] = idOf.get(key(pod));
        demands[p] = demandOf.computeIfAbsent(ids[p], id -> PreparedTrace.demandOf(pod));
      }
      count = idOf.size();
    }

    private static List<Long> key(TracePod p) {
      return List.of(p.cpuMilli(), (long) p.gpuMilli(), (long) p.gpus());
    }

    int count() {
      return count;
    }

    int id(int p) {
      return ids[p];
    }

    CardDemand demand(int p) {
      return demands[p];
    }
  }
}
