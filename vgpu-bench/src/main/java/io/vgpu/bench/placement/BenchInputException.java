package io.vgpu.bench.placement;

/**
 * Input the user can fix (a missing file, a bad CSV field, an unknown policy, a bad seed range); the
 * message is one line naming the field, the value and, for files, {@code file:line}.
 */
public final class BenchInputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error with a one-line message. */
  public BenchInputException(String message) {
    super(message, null, false, false);
  }
}
