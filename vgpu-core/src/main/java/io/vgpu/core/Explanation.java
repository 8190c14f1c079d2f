package io.vgpu.core;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRef;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Why a pod fits where it fits and not elsewhere, card by card, and the cheapest change that would let
 * it run.
 *
 * @param pod the pod
 * @param nodes one entry per candidate node, in candidate order
 * @param nearest the node whose cheapest fix is smallest, when the pod fits nowhere and some fix exists
 */
public record Explanation(PodRef pod, List<NodeExplanation> nodes, Optional<NearestFix> nearest) {

  /** Copies the list. */
  public Explanation {
    nodes = List.copyOf(nodes);
  }

  /**
   * One node's verdict.
   *
   * @param node the node
   * @param fits whether the pod fits on it now
   * @param chosen when it fits: the devices the pod would get, init containers first
   * @param rejection when it does not fit: HAMi's summary of the failed checks
   * @param cards when it does not fit: every card, judged against the container that did not fit
   */
  public record NodeExplanation(
      String node, boolean fits, List<DeviceGrant> chosen, @Nullable NodeRejection rejection, List<CardExplanation> cards) {
    /** Copies the lists. */
    public NodeExplanation {
      chosen = List.copyOf(chosen);
      cards = List.copyOf(cards);
    }
  }

  /**
   * One card's verdict.
   *
   * @param uuid the card
   * @param reasons every check the card fails, in HAMi's check order (empty if it passes)
   * @param shortBy how much of each resource the card lacks for the container
   * @param heldBy pods holding a grant on the card
   */
  public record CardExplanation(String uuid, List<FitReason> reasons, Shortfall shortBy, List<PodRef> heldBy) {
    /** Copies the lists. */
    public CardExplanation {
      reasons = List.copyOf(reasons);
      heldBy = List.copyOf(heldBy);
    }
  }

  /**
   * How much a card lacks.
   *
   * @param memoryMiB memory to free, in MiB
   * @param cores compute to free, in percent of the card
   * @param sharers sharing slots to free
   */
  public record Shortfall(int memoryMiB, int cores, int sharers) {
    /** Nothing lacking. */
    public static final Shortfall NONE = new Shortfall(0, 0, 0);

    /** Whether the card lacks nothing. */
    public boolean isNone() {
      return memoryMiB == 0 && cores == 0 && sharers == 0;
    }
  }

  /**
   * The cheapest fix found: on this node, these cards, with this change.
   *
   * @param node the node
   * @param cards the cards that would then take the container
   * @param change what to do, in one line
   * @param cost the fix's size: the sum over resources and cards of shortfall divided by the card's
   *     capacity
   */
  public record NearestFix(String node, List<String> cards, String change, double cost) {
    /** Copies the list. */
    public NearestFix {
      cards = List.copyOf(cards);
    }
  }
}
