package io.vgpu.k8s.pod;

/**
 * A pod the scheduler cannot evaluate, such as one with an invalid {@code
 * hami.io/device-scoring-weights} annotation; the message is one line naming the field and the value.
 * The pod stays pending with this message, as HAMi's filter returns it as an error.
 */
public final class PodRequestException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with a one-line message. */
  public PodRequestException(String message) {
    super(message);
  }
}
