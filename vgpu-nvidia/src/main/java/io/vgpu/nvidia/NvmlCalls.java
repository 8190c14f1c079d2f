package io.vgpu.nvidia;

import io.vgpu.nvidia.internal.NvmlBinding;
import io.vgpu.nvidia.internal.NvmlLibrary;
import java.util.function.IntSupplier;

/** Turns NVML return codes into {@link NvmlException}s with NVML's own text. */
final class NvmlCalls {
  private final NvmlBinding binding;

  NvmlCalls(NvmlBinding binding) {
    this.binding = binding;
  }

  NvmlLibrary api() {
    return binding.api();
  }

  String source() {
    return binding.source();
  }

  /** Throws unless {@code code} is {@code NVML_SUCCESS}. */
  void check(String function, String subject, int code) {
    if (code != 0) {
      throw failure(function, subject, code);
    }
  }

  /**
   * Runs an interface-mapped call and returns its code; a function the driver lacks becomes {@code
   * NVML_ERROR_FUNCTION_NOT_FOUND} instead of JNA's {@link UnsatisfiedLinkError}.
   */
  int invoke(IntSupplier call) {
    try {
      return call.getAsInt();
    } catch (UnsatisfiedLinkError e) {
      return NvmlError.FUNCTION_NOT_FOUND.code();
    }
  }

  /** Runs an interface-mapped call and throws unless it succeeds. */
  void call(String function, String subject, IntSupplier call) {
    check(function, subject, invoke(call));
  }

  NvmlException failure(String function, String subject, int code) {
    String text = errorString(code);
    String where = subject.isEmpty() ? function : function + " (" + subject + ")";
    return new NvmlException(code, text, where + ": " + text + " (" + NvmlError.of(code).cName() + ")");
  }

  private String errorString(int code) {
    try {
      String text = binding.api().nvmlErrorString(code);
      return text == null || text.isEmpty() ? "error " + code : text;
    } catch (UnsatisfiedLinkError e) {
      return "error " + code;
    }
  }
}
