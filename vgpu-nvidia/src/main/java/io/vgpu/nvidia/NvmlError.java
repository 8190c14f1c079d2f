package io.vgpu.nvidia;

/** NVML's return codes ({@code nvmlReturn_t}) other than success, by their {@code NVML_ERROR_} names. */
public enum NvmlError {
  UNINITIALIZED(1),
  INVALID_ARGUMENT(2),
  NOT_SUPPORTED(3),
  NO_PERMISSION(4),
  ALREADY_INITIALIZED(5),
  NOT_FOUND(6),
  INSUFFICIENT_SIZE(7),
  INSUFFICIENT_POWER(8),
  DRIVER_NOT_LOADED(9),
  TIMEOUT(10),
  IRQ_ISSUE(11),
  LIBRARY_NOT_FOUND(12),
  FUNCTION_NOT_FOUND(13),
  CORRUPTED_INFOROM(14),
  GPU_IS_LOST(15),
  RESET_REQUIRED(16),
  OPERATING_SYSTEM(17),
  LIB_RM_VERSION_MISMATCH(18),
  IN_USE(19),
  MEMORY(20),
  NO_DATA(21),
  VGPU_ECC_NOT_SUPPORTED(22),
  INSUFFICIENT_RESOURCES(23),
  FREQ_NOT_SUPPORTED(24),
  ARGUMENT_VERSION_MISMATCH(25),
  DEPRECATED(26),
  NOT_READY(27),
  GPU_NOT_FOUND(28),
  INVALID_STATE(29),
  /** {@code NVML_ERROR_UNKNOWN} (999), and any code this enum does not know. */
  UNKNOWN(999);

  private final int code;

  NvmlError(int code) {
    this.code = code;
  }

  /** The numeric {@code nvmlReturn_t}. */
  public int code() {
    return code;
  }

  /** The error of a non-zero return code; codes newer than this enum map to {@link #UNKNOWN}. */
  public static NvmlError of(int code) {
    for (NvmlError e : values()) {
      if (e.code == code) {
        return e;
      }
    }
    return UNKNOWN;
  }

  /** The C name, e.g. {@code NVML_ERROR_GPU_IS_LOST}. */
  public String cName() {
    return "NVML_ERROR_" + name();
  }
}
