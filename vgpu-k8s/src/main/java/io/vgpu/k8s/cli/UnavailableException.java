package io.vgpu.k8s.cli;

/**
 * Something the command needs from its surroundings (the API server, a driver, a port) is not there:
 * reported as one line with exit code 1, without the "internal error" wording or a stack trace.
 */
public final class UnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An exception with a one-line message saying what is missing and where it was looked for. */
  public UnavailableException(String message) {
    super(message);
  }
}
