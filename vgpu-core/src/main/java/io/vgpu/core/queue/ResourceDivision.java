package io.vgpu.core.queue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * KAI Scheduler v0.17's division of GPU, CPU and memory among queues (its proportion plugin), as a pure
 * function. Per resource, top-down through the queue tree, each level dividing what its parent was given
 * (the cluster's total at the top):
 *
 * <ol>
 *   <li><b>Deserved.</b> Each queue gets {@code min(quota, requested)} (a quota of -1 is the whole amount),
 *       even when the quotas add up to more than there is.
 *   <li><b>Over quota.</b> What is left goes by priority level, highest first; within a level in rounds,
 *       each unsatisfied queue with a weight offered {@code left × weight ÷ Σ weights}: all it still asks
 *       for when that fits, else the whole units of its offer. Rounds repeat while some queue took less than
 *       its offer.
 *   <li><b>Leftovers</b> of the rounding go one unit (or what is left, if less) at a time to the queues with
 *       the largest unrounded remainder, then the earliest created.
 * </ol>
 *
 * A queue is satisfied once its share covers its request or reaches its limit. Historical usage (KAI's
 * time-based fair share) is not modelled: usage counts as 0, so the weights are the over-quota weights.
 * Queues are taken in creation order, which is KAI's tie-break.
 *
 * <p>KAI recomputes the division in every scheduling session, so it is kept cheap: a queue's terms,
 * demand and shares live in primitive arrays for the duration of one call, and nothing is boxed or
 * looked up by key inside the rounds (1,000 queues and three resources in well under a millisecond;
 * see vgpu-bench's {@code QueueDivisionBenchmark}).
 */
public final class ResourceDivision {
  /** KAI's default {@code kValue}: how strongly past usage bends the weights (no effect while usage is 0). */
  public static final double DEFAULT_K_VALUE = 1.0;

  private static final QueueResource[] RESOURCES = QueueResource.values();

  /** Highest priority first; the sort is stable, so each priority level keeps creation order. */
  private static final Comparator<Node> BY_PRIORITY = (a, b) -> Integer.compare(b.priority, a.priority);

  /** Largest unrounded remainder first, then the earliest created. */
  private static final Comparator<Node> BY_REMAINDER =
      (a, b) -> {
        int byRemainder = Double.compare(b.remainder, a.remainder);
        return byRemainder != 0 ? byRemainder : Integer.compare(a.created, b.created);
      };

  private ResourceDivision() {}

  /**
   * Divides the total among the queues.
   *
   * @param queues every queue in creation order; a parent named must be among them
   * @param demands each queue's own demand by name (leaves; a queue without one has none)
   * @param total the amount of each resource to divide (absent: 0)
   * @return each queue's share of each resource, in the order of {@code queues}
   * @throws IllegalArgumentException when a queue is named twice or names a parent that is not given, or
   *     the parents form a cycle
   */
  public static Map<String, Map<QueueResource, QueueShare>> divide(List<QueueSpec> queues, Map<String, QueueDemand> demands, Map<QueueResource, Double> total) {
    Map<String, Node> byName = new HashMap<>(capacity(queues.size()));
    Node[] nodes = tree(queues, byName);
    double[] requested = new double[RESOURCES.length];
    double[] allocated = new double[RESOURCES.length];
    for (Map.Entry<String, QueueDemand> d : demands.entrySet()) {
      Node node = byName.get(d.getKey());
      if (node == null) {
        throw new IllegalArgumentException("a demand names queue " + d.getKey() + ", which is not given");
      }
      for (int r = 0; r < RESOURCES.length; r++) {
        requested[r] = d.getValue().requested(RESOURCES[r]);
        allocated[r] = d.getValue().allocated(RESOURCES[r]);
      }
      // A parent's demand is the sum of its children's, added in the order the demands come.
      for (Node n = node; n != null; n = n.parent) {
        for (int r = 0; r < RESOURCES.length; r++) {
          n.requested[r] += requested[r];
          n.allocated[r] += allocated[r];
        }
      }
    }
    List<Node> top = new ArrayList<>();
    for (Node n : nodes) {
      if (n.parent == null) {
        top.add(n);
      }
    }
    for (int r = 0; r < RESOURCES.length; r++) {
      divideLevel(total.getOrDefault(RESOURCES[r], 0.0), top, r);
    }
    Map<String, Map<QueueResource, QueueShare>> out = new LinkedHashMap<>(capacity(nodes.length));
    @SuppressWarnings("unchecked")
    Map.Entry<QueueResource, QueueShare>[] shares = new Map.Entry[RESOURCES.length];
    for (Node n : nodes) {
      for (int r = 0; r < RESOURCES.length; r++) {
        shares[r] = Map.entry(RESOURCES[r], new QueueShare(n.deserved[r], n.requestable(r), n.allocated[r], n.fairShare[r], n.limit[r]));
      }
      out.put(n.spec.name(), Map.ofEntries(shares));
    }
    return out;
  }

  /** Builds the tree in creation order, indexing it by name into {@code byName}. */
  private static Node[] tree(List<QueueSpec> queues, Map<String, Node> byName) {
    Node[] nodes = new Node[queues.size()];
    for (int i = 0; i < nodes.length; i++) {
      QueueSpec q = Objects.requireNonNull(queues.get(i), "queue");
      nodes[i] = new Node(q, i);
      if (byName.putIfAbsent(q.name(), nodes[i]) != null) {
        throw new IllegalArgumentException("queue " + q.name() + " is given twice");
      }
    }
    for (Node n : nodes) {
      if (n.spec.parent().isPresent()) {
        Node parent = byName.get(n.spec.parent().get());
        if (parent == null) {
          throw new IllegalArgumentException("queue " + n.spec.name() + " names parent " + n.spec.parent().get() + ", which is not given");
        }
        n.parent = parent;
        parent.children.add(n);
      }
    }
    for (Node n : nodes) {
      int depth = 0;
      for (Node p = n.parent; p != null; p = p.parent) {
        if (++depth > nodes.length) {
          throw new IllegalArgumentException("the parents of queue " + n.spec.name() + " form a cycle");
        }
      }
    }
    return nodes;
  }

  private static void divideLevel(double total, List<Node> level, int r) {
    double left = total;
    for (Node q : level) {
      double deserved = q.quota[r] == ResourceTerms.ALL ? total : q.quota[r];
      q.deserved[r] = deserved;
      double amount = Math.min(deserved, q.requestable(r));
      q.fairShare[r] = amount;
      left -= amount;
    }
    if (left > 0) {
      divideOverQuota(left, level, r);
    }
    for (Node q : level) {
      if (!q.children.isEmpty()) {
        divideLevel(q.fairShare[r], q.children, r);
      }
    }
  }

  private static double divideOverQuota(double amount, List<Node> level, int r) {
    Node[] ordered = level.toArray(new Node[0]);
    Arrays.sort(ordered, BY_PRIORITY);
    double left = amount;
    for (int from = 0; from < ordered.length; ) {
      int to = from + 1;
      while (to < ordered.length && ordered[to].priority == ordered[from].priority) {
        to++;
      }
      if (left <= 0) {
        break;
      }
      for (int i = from; i < to; i++) {
        ordered[i].hasRemainder = false;
      }
      left = divideInRounds(left, ordered, from, to, r);
      if (left > 0) {
        left = divideLeftovers(left, ordered, from, to, r);
      }
      from = to;
    }
    return left;
  }

  /**
   * The rounds of one priority level, {@code queues[from..to)}; records on each queue cut to whole units
   * its unrounded remainder.
   */
  private static double divideInRounds(double amount, Node[] queues, int from, int to, int r) {
    double left = amount;
    // Each round that runs again has satisfied at least one queue, so there are at most |queues| + 1.
    for (int round = 0; round <= to - from; round++) {
      double offered = left;
      double weightSum = shareWeights(queues, from, to, r);
      if (weightSum == 0) {
        break;
      }
      boolean again = false;
      for (int i = from; i < to; i++) {
        Node q = queues[i];
        if (left == 0) {
          break;
        }
        if (q.satisfied(r) || q.weight[r] == 0) {
          continue;
        }
        double wants = q.stillWants(r);
        double offer = offered * q.roundWeight / weightSum;
        double give;
        if (wants <= offer) {
          give = wants;
          q.hasRemainder = false;
        } else {
          give = Math.floor(offer);
          if (offer - give > 0) {
            q.remainder = offer - give;
            q.hasRemainder = true;
          }
        }
        if (give == 0) {
          continue;
        }
        q.fairShare[r] += give;
        left -= give;
        again = again || wants < offer;
      }
      if (!again || left == 0) {
        break;
      }
    }
    return left;
  }

  /**
   * Sets each unsatisfied queue's weight for this round (its over-quota weight, normalised; usage 0);
   * returns their sum.
   */
  private static double shareWeights(Node[] queues, int from, int to, int r) {
    double total = 0;
    for (int i = from; i < to; i++) {
      if (queues[i].stillWants(r) > 0) {
        total += queues[i].weight[r];
      }
    }
    if (total == 0) {
      return 0;
    }
    double sum = 0;
    for (int i = from; i < to; i++) {
      Node q = queues[i];
      if (q.satisfied(r)) {
        continue;
      }
      double normalised = q.weight[r] / total;
      double weight = Math.max(0, normalised + DEFAULT_K_VALUE * normalised);
      q.roundWeight = weight;
      sum += weight;
    }
    return sum;
  }

  private static double divideLeftovers(double amount, Node[] queues, int from, int to, int r) {
    List<Node> order = new ArrayList<>();
    for (int i = from; i < to; i++) {
      if (queues[i].hasRemainder) {
        order.add(queues[i]);
      }
    }
    order.sort(BY_REMAINDER);
    double left = amount;
    for (Node q : order) {
      if (left == 0) {
        break;
      }
      double give = Math.min(1, left);
      q.fairShare[r] += give;
      left -= give;
    }
    return left;
  }

  /** A {@link HashMap}'s initial capacity for {@code size} entries without a resize. */
  private static int capacity(int size) {
    return (int) (size / 0.75f) + 1;
  }

  /** A queue during one division; every array is indexed by {@link QueueResource#ordinal()}. */
  private static final class Node {
    final QueueSpec spec;
    final int created;
    final int priority;
    Node parent;
    final List<Node> children = new ArrayList<>();
    final double[] quota = new double[RESOURCES.length];
    final double[] limit = new double[RESOURCES.length];
    final double[] weight = new double[RESOURCES.length];
    final double[] requested = new double[RESOURCES.length];
    final double[] allocated = new double[RESOURCES.length];
    final double[] deserved = new double[RESOURCES.length];
    final double[] fairShare = new double[RESOURCES.length];
    /** This round's normalised weight, set by {@code shareWeights} for an unsatisfied queue. */
    double roundWeight;
    /** The unrounded remainder of the last offer cut to whole units in this priority level, if any. */
    double remainder;
    boolean hasRemainder;

    Node(QueueSpec spec, int created) {
      this.spec = spec;
      this.created = created;
      this.priority = spec.priority();
      for (int r = 0; r < RESOURCES.length; r++) {
        ResourceTerms terms = spec.terms(RESOURCES[r]);
        quota[r] = terms.quota();
        limit[r] = terms.limit();
        weight[r] = terms.overQuotaWeight();
      }
    }

    double requestable(int r) {
      return limit[r] == ResourceTerms.UNLIMITED ? requested[r] : Math.min(limit[r], requested[r]);
    }

    double stillWants(int r) {
      return Math.max(0, requestable(r) - fairShare[r]);
    }

    boolean satisfied(int r) {
      return requested[r] <= fairShare[r] || (limit[r] != ResourceTerms.UNLIMITED && limit[r] <= fairShare[r]);
    }
  }
}
