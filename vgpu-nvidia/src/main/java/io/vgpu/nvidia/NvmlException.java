package io.vgpu.nvidia;

/**
 * An NVML call failed, or NVML could not be loaded. Carries the return code and NVML's own text for
 * it ({@code nvmlErrorString}); the message is one line naming the function, e.g. {@code
 * nvmlDeviceGetMemoryInfo_v2 (GPU 1): GPU is lost (NVML_ERROR_GPU_IS_LOST)}.
 */
public class NvmlException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final NvmlError error;
  private final int returnCode;
  private final String errorString;

  /**
   * Creates an exception.
   *
   * @param returnCode the {@code nvmlReturn_t}
   * @param errorString NVML's text for it
   * @param message the one-line message
   */
  public NvmlException(int returnCode, String errorString, String message) {
    super(message);
    this.error = NvmlError.of(returnCode);
    this.returnCode = returnCode;
    this.errorString = errorString;
  }

  /** The error, e.g. {@link NvmlError#GPU_IS_LOST}. */
  public NvmlError error() {
    return error;
  }

  /** The raw {@code nvmlReturn_t}, also for codes {@link NvmlError} does not know. */
  public int returnCode() {
    return returnCode;
  }

  /** NVML's text for the code ({@code nvmlErrorString}). */
  public String errorString() {
    return errorString;
  }
}
