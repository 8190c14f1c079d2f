package io.vgpu.core;

import java.util.Objects;

/**
 * Why a pod waits although cards may be free: a reason that belongs to the pod, not to a node.
 *
 * @param reason the reason, with its wire word
 * @param message one line naming the queue or gang and the numbers
 */
public record Waiting(Reason reason, String message) {
  /** Validates the fields. */
  public Waiting {
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(message, "message");
  }

  /** The reasons a pod waits at the pod level. */
  public enum Reason {
    /** Its queue does not exist (yet), has a missing or cyclic parent, or is not a leaf. */
    QUEUE_MISSING("QueueMissing"),
    /** Placing it would take its queue, or a queue above it, past its limit. */
    QUEUE_LIMIT("QueueLimit"),
    /** Its gang has fewer members that fit, or have arrived, than its minimum. */
    GANG_INCOMPLETE("GangIncomplete");

    private final String word;

    Reason(String word) {
      this.word = word;
    }

    /** The reason as scenarios, Events and logs spell it. */
    public String word() {
      return word;
    }
  }
}
