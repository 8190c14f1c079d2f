package io.vgpu.core;

/**
 * The outcome of {@link Engine#reserve}.
 *
 * @param status what happened
 * @param message for a refusal, one line saying why
 */
public record ReserveResult(Status status, String message) {

  /** What a reservation attempt did. */
  public enum Status {
    /** The grant is now counted. */
    RESERVED,
    /** The pod already holds a grant; nothing changed. */
    ALREADY_RESERVED,
    /** The grant no longer fits (another reservation won) or exceeds the namespace's quota. */
    CONFLICT,
    /** The grant names a node or device the engine does not know. */
    UNKNOWN
  }

  static final ReserveResult RESERVED = new ReserveResult(Status.RESERVED, "");

  /** Whether the grant is now counted. */
  public boolean reserved() {
    return status == Status.RESERVED;
  }
}
