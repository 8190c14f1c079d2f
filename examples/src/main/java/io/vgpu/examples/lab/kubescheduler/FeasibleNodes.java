package io.vgpu.examples.lab.kubescheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * How many feasible nodes kube-scheduler looks for before it stops filtering, and where it starts looking
 * ({@code schedule_one.go}: {@code numFeasibleNodesToFind} and {@code nextStartNodeIndex}). Below 100 nodes
 * every node is looked at; above, the profile's {@code percentageOfNodesToScore}, else the configuration's,
 * else an adaptive one ({@code 50 - nodes/125} percent, at least 5) of the nodes, and never fewer than 100.
 * Each cycle starts at the node after the last one the previous cycle looked at, wrapping around; a cycle
 * that looked at every node starts again where it started.
 */
final class FeasibleNodes {
  /** kube-scheduler's {@code minFeasibleNodesToFind}. */
  static final int MIN_FEASIBLE_NODES = 100;
  /** kube-scheduler's {@code minFeasibleNodesPercentageToFind}. */
  static final int MIN_PERCENTAGE = 5;

  private int nextStart;

  /**
   * How many feasible nodes a cycle looks for among {@code allNodes}.
   *
   * @param percentage the percentage of nodes to score; 0 when the configuration sets none
   */
  static int numToFind(int percentage, int allNodes) {
    if (allNodes < MIN_FEASIBLE_NODES) {
      return allNodes;
    }
    int p = percentage;
    if (p == 0) {
      p = Math.max(MIN_PERCENTAGE, 50 - allNodes / 125);
    }
    int n = (int) ((long) allNodes * p / 100);
    return Math.max(n, MIN_FEASIBLE_NODES);
  }

  /**
   * One cycle's feasible nodes: {@code nodes} looked at from where the last cycle stopped, until {@link
   * #numToFind} of them passed {@code rejection} (which answers null for a feasible node, else why not).
   * The rejected nodes looked at go into {@code rejected}.
   */
  synchronized List<String> select(List<String> nodes, int percentage, Function<String, String> rejection, Map<String, String> rejected) {
    int n = nodes.size();
    List<String> feasible = new ArrayList<>();
    if (n == 0) {
      return feasible;
    }
    int wanted = numToFind(percentage, n);
    int start = nextStart % n;
    int looked = 0;
    while (looked < n && feasible.size() < wanted) {
      String node = nodes.get((start + looked) % n);
      looked++;
      String why = rejection.apply(node);
      if (why == null) {
        feasible.add(node);
      } else {
        rejected.put(node, why);
      }
    }
    nextStart = (start + looked) % n;
    return feasible;
  }
}
