package io.vgpu.k8s.yaml;

/**
 * Bad input a user can fix: the message is one line that names the field, the value and, when known,
 * where it was written ({@code file:line:column: field: problem}).
 */
public final class InputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error at a known position. */
  public InputException(Position position, String message) {
    super(position + ": " + message);
  }

  /** An error with no position, such as a missing file. */
  public InputException(String message) {
    super(message);
  }

  /** An error at a known position with its cause (shown only when debugging). */
  public InputException(Position position, String message, Throwable cause) {
    super(position + ": " + message, cause);
  }
}
