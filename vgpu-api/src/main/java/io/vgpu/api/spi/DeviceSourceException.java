package io.vgpu.api.spi;

/** A device source could not read the node's devices; the message says what and why in one line. */
public class DeviceSourceException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates an exception with a one-line message. */
  public DeviceSourceException(String message) {
    super(message);
  }

  /** Creates an exception with a one-line message and its cause. */
  public DeviceSourceException(String message, Throwable cause) {
    super(message, cause);
  }
}
