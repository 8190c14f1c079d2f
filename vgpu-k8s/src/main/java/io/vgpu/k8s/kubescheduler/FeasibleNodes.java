package io.vgpu.k8s.kubescheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * How many feasible nodes kube-scheduler looks for before it stops filtering, and where it starts looking
 * ({@code schedule_one.go}: {@code numFeasibleNodesToFind} and {@code nextStartNodeIndex}). Below 100 nodes
 * every node is looked at; above, the profile's {@code percentageOfNodesToScore}, else the configuration's,
 * else an adaptive one ({@code 50 - nodes/125} percent, at least 5) of the nodes, and never fewer than 100.
 * Each cycle starts at the node after the last one the previous cycle looked at, wrapping around; a cycle
 * that looked at every node starts again where it started.
 *
 * <p>One instance is one kube-scheduler: the start index is shared by every profile and every pod it
 * schedules. Not modelled: kube-scheduler filters nodes in parallel, so a cycle may look at a few nodes
 * past the share and list its feasible nodes in the order its workers found them; here one worker looks
 * at them in order.
 */
public final class FeasibleNodes {
  /** kube-scheduler's {@code minFeasibleNodesToFind}: below this many nodes every node is looked at. */
  public static final int MIN_FEASIBLE_NODES = 100;

  /** kube-scheduler's {@code minFeasibleNodesPercentageToFind}: the adaptive share's floor, in percent. */
  public static final int MIN_PERCENTAGE = 5;

  private int nextStart;

  /** A scheduler that has not scheduled yet: its first cycle starts at the first node. */
  public FeasibleNodes() {}

  /**
   * How many feasible nodes a cycle looks for among {@code allNodes}.
   *
   * @param percentage the percentage of nodes to score, 0 to 100; 0 when the configuration sets none
   *     (kube-scheduler's adaptive share)
   * @param allNodes how many nodes the cluster has
   * @return how many feasible nodes the cycle stops at; {@code allNodes} when that is under {@link
   *     #MIN_FEASIBLE_NODES}
   * @throws IllegalArgumentException when {@code percentage} is outside 0..100, which kube-scheduler's
   *     configuration validation refuses
   */
  public static int numToFind(int percentage, int allNodes) {
    if (percentage < 0 || percentage > 100) {
      throw new IllegalArgumentException("percentageOfNodesToScore " + percentage + " is not from 0 to 100");
    }
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
   * #numToFind} of them passed {@code rejection}, or every node was looked at. The rejected nodes looked
   * at go into {@code rejected}; the next cycle starts after the last node looked at.
   *
   * @param nodes every node of the cluster, in the order kube-scheduler lists them
   * @param percentage the profile's percentage of nodes to score (see {@link #numToFind})
   * @param rejection answers null for a feasible node, else why it is not
   * @param rejected receives each rejected node looked at, with why
   * @return the feasible nodes found, in the order they were looked at
   */
  public synchronized List<String> select(List<String> nodes, int percentage, Function<String, @Nullable String> rejection, Map<String, String> rejected) {
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
