package io.vgpu.k8s.simulate;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.core.Explanation;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Why a pod of a scenario runs where it runs or waits, node by node and card by card, at the end of the
 * scenario, and the cheapest change that would let it run.
 *
 * @param pod the pod
 * @param phase its phase at the end
 * @param message the webhook's or scheduler's message, when it has one
 * @param nodes one verdict per node, in file order
 * @param nearest when it fits nowhere: the node whose cheapest fix is smallest
 */
public record PodExplanation(
    PodRef pod, Phase phase, String message, List<NodeVerdict> nodes, Optional<Explanation.NearestFix> nearest) {

  /** Copies the list. */
  public PodExplanation {
    Objects.requireNonNull(message, "message");
    nodes = List.copyOf(nodes);
  }

  /**
   * One node's verdict.
   *
   * @param node the node
   * @param fits whether the pod fits there now
   * @param reason when it does not fit: HAMi's reason string (or {@code NodeSelectorMismatch})
   * @param chosen when it fits: the cards the pod would get, init containers first
   * @param cards when it does not fit: every card judged against the container that did not fit
   */
  public record NodeVerdict(
      String node, boolean fits, String reason, List<DeviceGrant> chosen, List<Explanation.CardExplanation> cards) {
    /** Copies the lists. */
    public NodeVerdict {
      chosen = List.copyOf(chosen);
      cards = List.copyOf(cards);
    }
  }
}
