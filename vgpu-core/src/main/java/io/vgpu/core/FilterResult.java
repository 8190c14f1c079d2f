package io.vgpu.core;

import java.util.List;
import java.util.Optional;

/**
 * The answer to "where does this pod go?": the best placement if any node fits, and why the others do
 * not (when reasons were asked for).
 *
 * @param placement the best placement, empty when no node fits
 * @param fitting nodes the pod fits on with their scores, in candidate order
 * @param rejections the nodes the pod does not fit on, in candidate order (empty unless reasons were
 *     asked for)
 * @param waiting why the pod waits whatever the cards (its queue is missing or at its limit), in which
 *     case there is no placement and no node is listed
 * @param fittingCount how many nodes the pod fits on when they were listed, also those {@code
 *     fitting} leaves out when it lists only the first few ({@link Engine#filterResolved(CompiledRequest,
 *     CandidateNodes, int)}); 0 otherwise
 */
public record FilterResult(
    Optional<Placement> placement, List<NodeScore> fitting, List<NodeRejection> rejections, Optional<Waiting> waiting, int fittingCount) {

  /** Copies the lists. */
  public FilterResult {
    fitting = List.copyOf(fitting);
    rejections = List.copyOf(rejections);
    if (waiting.isPresent() && placement.isPresent()) {
      throw new IllegalArgumentException("a pod that waits has no placement");
    }
    if (fittingCount < fitting.size()) {
      throw new IllegalArgumentException("fittingCount " + fittingCount + " is below the " + fitting.size() + " fitting nodes listed");
    }
  }

  /** A result that lists every fitting node. */
  public FilterResult(Optional<Placement> placement, List<NodeScore> fitting, List<NodeRejection> rejections, Optional<Waiting> waiting) {
    this(placement, fitting, rejections, waiting, fitting.size());
  }

  /** A result without a pod-level wait that lists every fitting node. */
  public FilterResult(Optional<Placement> placement, List<NodeScore> fitting, List<NodeRejection> rejections) {
    this(placement, fitting, rejections, Optional.empty());
  }

  /** The result for a pod that waits whatever the cards. */
  public static FilterResult waiting(Waiting why) {
    return new FilterResult(Optional.empty(), List.of(), List.of(), Optional.of(why));
  }

  /**
   * A node the pod fits on.
   *
   * @param node the node
   * @param score its score
   */
  public record NodeScore(String node, double score) {}
}
