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
 */
public record FilterResult(
    Optional<Placement> placement, List<NodeScore> fitting, List<NodeRejection> rejections) {

  /** Copies the lists. */
  public FilterResult {
    fitting = List.copyOf(fitting);
    rejections = List.copyOf(rejections);
  }

  /**
   * A node the pod fits on.
   *
   * @param node the node
   * @param score its score
   */
  public record NodeScore(String node, double score) {}
}
