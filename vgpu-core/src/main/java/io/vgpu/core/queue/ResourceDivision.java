package io.vgpu.core.queue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

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
 */
public final class ResourceDivision {
  /** KAI's default {@code kValue}: how strongly past usage bends the weights (no effect while usage is 0). */
  public static final double DEFAULT_K_VALUE = 1.0;

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
    Map<String, Node> nodes = tree(queues);
    for (Map.Entry<String, QueueDemand> d : demands.entrySet()) {
      Node node = nodes.get(d.getKey());
      if (node == null) {
        throw new IllegalArgumentException("a demand names queue " + d.getKey() + ", which is not given");
      }
      for (Node n = node; n != null; n = n.parent) {
        for (QueueResource r : QueueResource.values()) {
          n.requested.merge(r, d.getValue().requested(r), Double::sum);
          n.allocated.merge(r, d.getValue().allocated(r), Double::sum);
        }
      }
    }
    List<Node> top = nodes.values().stream().filter(n -> n.parent == null).toList();
    Map<String, Map<QueueResource, QueueShare>> out = new LinkedHashMap<>();
    for (QueueResource r : QueueResource.values()) {
      divideLevel(total.getOrDefault(r, 0.0), top, r);
    }
    for (Node n : nodes.values()) {
      EnumMap<QueueResource, QueueShare> shares = new EnumMap<>(QueueResource.class);
      for (QueueResource r : QueueResource.values()) {
        ResourceTerms terms = n.spec.terms(r);
        shares.put(r, new QueueShare(n.deserved.get(r), n.requestable(r), n.allocated.get(r), n.fairShare.get(r), terms.limit()));
      }
      out.put(n.spec.name(), Map.copyOf(shares));
    }
    return out;
  }

  private static Map<String, Node> tree(List<QueueSpec> queues) {
    Map<String, Node> nodes = new LinkedHashMap<>();
    for (int i = 0; i < queues.size(); i++) {
      QueueSpec q = Objects.requireNonNull(queues.get(i), "queue");
      if (nodes.putIfAbsent(q.name(), new Node(q, i)) != null) {
        throw new IllegalArgumentException("queue " + q.name() + " is given twice");
      }
    }
    for (Node n : nodes.values()) {
      if (n.spec.parent().isPresent()) {
        Node parent = nodes.get(n.spec.parent().get());
        if (parent == null) {
          throw new IllegalArgumentException("queue " + n.spec.name() + " names parent " + n.spec.parent().get() + ", which is not given");
        }
        n.parent = parent;
        parent.children.add(n);
      }
    }
    for (Node n : nodes.values()) {
      int depth = 0;
      for (Node p = n.parent; p != null; p = p.parent) {
        if (++depth > nodes.size()) {
          throw new IllegalArgumentException("the parents of queue " + n.spec.name() + " form a cycle");
        }
      }
    }
    return nodes;
  }

  private static void divideLevel(double total, List<Node> level, QueueResource r) {
    double left = total;
    for (Node q : level) {
      ResourceTerms terms = q.spec.terms(r);
      double deserved = terms.quotaIsAll() ? total : terms.quota();
      q.deserved.put(r, deserved);
      double amount = Math.min(deserved, q.requestable(r));
      q.fairShare.put(r, amount);
      left -= amount;
    }
    if (left > 0) {
      divideOverQuota(left, level, r);
    }
    for (Node q : level) {
      if (!q.children.isEmpty()) {
        divideLevel(q.fairShare.get(r), q.children, r);
      }
    }
  }

  private static double divideOverQuota(double amount, List<Node> level, QueueResource r) {
    TreeMap<Integer, List<Node>> byPriority = new TreeMap<>(Comparator.reverseOrder());
    for (Node q : level) {
      byPriority.computeIfAbsent(q.spec.priority(), p -> new ArrayList<>()).add(q);
    }
    double left = amount;
    for (List<Node> queues : byPriority.values()) {
      if (left <= 0) {
        break;
      }
      Map<Node, Double> remainders = new LinkedHashMap<>();
      left = divideInRounds(left, queues, r, remainders);
      if (left > 0 && !remainders.isEmpty()) {
        left = divideLeftovers(left, remainders, r);
      }
    }
    return left;
  }

  /** The rounds of one priority level; records the unrounded remainder of each queue cut to whole units. */
  private static double divideInRounds(double amount, List<Node> queues, QueueResource r, Map<Node, Double> remainders) {
    double left = amount;
    // Each round that runs again has satisfied at least one queue, so there are at most |queues| + 1.
    for (int round = 0; round <= queues.size(); round++) {
      double offered = left;
      Map<Node, Double> weights = new HashMap<>();
      double weightSum = shareWeights(queues, r, weights);
      if (weightSum == 0) {
        break;
      }
      boolean again = false;
      for (Node q : queues) {
        if (left == 0) {
          break;
        }
        if (q.satisfied(r) || q.spec.terms(r).overQuotaWeight() == 0) {
          continue;
        }
        double wants = q.stillWants(r);
        double offer = offered * weights.get(q) / weightSum;
        double give;
        if (wants <= offer) {
          give = wants;
          remainders.remove(q);
        } else {
          give = Math.floor(offer);
          if (offer - give > 0) {
            remainders.put(q, offer - give);
          }
        }
        if (give == 0) {
          continue;
        }
        q.fairShare.merge(r, give, Double::sum);
        left -= give;
        again = again || wants < offer;
      }
      if (!again || left == 0) {
        break;
      }
    }
    return left;
  }

  /** Each unsatisfied queue's weight (its over-quota weight, normalised; usage 0); returns their sum. */
  private static double shareWeights(List<Node> queues, QueueResource r, Map<Node, Double> weights) {
    double total = 0;
    for (Node q : queues) {
      if (q.stillWants(r) > 0) {
        total += q.spec.terms(r).overQuotaWeight();
      }
    }
    if (total == 0) {
      return 0;
    }
    double sum = 0;
    for (Node q : queues) {
      if (q.satisfied(r)) {
        continue;
      }
      double normalised = q.spec.terms(r).overQuotaWeight() / total;
      double weight = Math.max(0, normalised + DEFAULT_K_VALUE * normalised);
      weights.put(q, weight);
      sum += weight;
    }
    return sum;
  }

  private static double divideLeftovers(double amount, Map<Node, Double> remainders, QueueResource r) {
    List<Map.Entry<Node, Double>> order = new ArrayList<>(remainders.entrySet());
    order.sort(Comparator.<Map.Entry<Node, Double>>comparingDouble(Map.Entry::getValue).reversed().thenComparingInt(e -> e.getKey().created));
    double left = amount;
    for (Map.Entry<Node, Double> e : order) {
      if (left == 0) {
        break;
      }
      double give = Math.min(1, left);
      e.getKey().fairShare.merge(r, give, Double::sum);
      left -= give;
    }
    return left;
  }

  /** A queue during one division. */
  private static final class Node {
    final QueueSpec spec;
    final int created;
    Node parent;
    final List<Node> children = new ArrayList<>();
    final EnumMap<QueueResource, Double> requested = zeros();
    final EnumMap<QueueResource, Double> allocated = zeros();
    final EnumMap<QueueResource, Double> deserved = zeros();
    final EnumMap<QueueResource, Double> fairShare = zeros();

    Node(QueueSpec spec, int created) {
      this.spec = spec;
      this.created = created;
    }

    double requestable(QueueResource r) {
      ResourceTerms terms = spec.terms(r);
      return terms.unlimited() ? requested.get(r) : Math.min(terms.limit(), requested.get(r));
    }

    double stillWants(QueueResource r) {
      return Math.max(0, requestable(r) - fairShare.get(r));
    }

    boolean satisfied(QueueResource r) {
      ResourceTerms terms = spec.terms(r);
      return requested.get(r) <= fairShare.get(r) || (!terms.unlimited() && terms.limit() <= fairShare.get(r));
    }

    private static EnumMap<QueueResource, Double> zeros() {
      EnumMap<QueueResource, Double> m = new EnumMap<>(QueueResource.class);
      for (QueueResource r : QueueResource.values()) {
        m.put(r, 0.0);
      }
      return m;
    }
  }
}
