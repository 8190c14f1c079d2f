package io.vgpu.nvidia;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import io.vgpu.nvidia.internal.NvmlBinding;
import io.vgpu.nvidia.internal.NvmlLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * NVML, the NVIDIA driver's management library ({@code libnvidia-ml.so.1}), through JNA. An instance is
 * one {@code nvmlInit_v2} / {@code nvmlShutdown} pair (NVML counts them, so instances may overlap);
 * the library itself is loaded once per process.
 *
 * <p>The library is found like any shared library ({@code jna.library.path}, {@code
 * LD_LIBRARY_PATH}, the linker cache) and then in the driver directories container setups use
 * ({@code /usr/local/nvidia/lib64}, {@code /run/nvidia/driver/...}). When it is missing, {@link
 * #open()} throws one {@link NvmlException} ({@link NvmlError#LIBRARY_NOT_FOUND}) with a one-line
 * message; there is never a fallback to anything else. Driver R510 or newer is required.
 *
 * <p>Thread-safe, as NVML is.
 */
public final class Nvml implements AutoCloseable {
  /** The library's SONAME. */
  public static final String LIBRARY = NvmlBinding.LIBRARY;

  private final NvmlCalls calls;
  private final AtomicBoolean closed = new AtomicBoolean();

  private Nvml(NvmlCalls calls) {
    this.calls = calls;
  }

  /**
   * Loads NVML by the usual search and initialises it.
   *
   * @throws NvmlException {@link NvmlError#LIBRARY_NOT_FOUND} when there is no {@code
   *     libnvidia-ml.so.1}, {@link NvmlError#FUNCTION_NOT_FOUND} when it is older than R510, or the
   *     error of {@code nvmlInit_v2} (e.g. {@link NvmlError#DRIVER_NOT_LOADED})
   */
  public static Nvml open() {
    return load(null);
  }

  /**
   * Loads NVML from a given file and initialises it.
   *
   * @param library a {@code libnvidia-ml.so.1}
   * @throws NvmlException as {@link #open()}; also when another NVML file is already loaded in this
   *     process
   */
  public static Nvml open(Path library) {
    return load(library);
  }

  private static Nvml load(@Nullable Path library) {
    NvmlBinding binding;
    try {
      binding = NvmlBinding.load(library);
    } catch (NvmlBinding.LoadFailure e) {
      NvmlError error = NvmlError.of(e.returnCode());
      String text = error == NvmlError.LIBRARY_NOT_FOUND ? "NVML Shared Library Not Found" : "Function Not Found";
      throw new NvmlException(e.returnCode(), text, e.getMessage());
    }
    NvmlCalls calls = new NvmlCalls(binding);
    calls.call("nvmlInit_v2", binding.source(), () -> binding.api().nvmlInit_v2());
    return new Nvml(calls);
  }

  /** Where the library was loaded from. */
  public String library() {
    return calls.source();
  }

  /** The driver's version, e.g. {@code 580.82.07}. */
  public String driverVersion() {
    byte[] buffer = new byte[NvmlLayout.DRIVER_VERSION_BUFFER];
    calls.call("nvmlSystemGetDriverVersion", "", () -> calls.api().nvmlSystemGetDriverVersion(buffer, buffer.length));
    return Native.toString(buffer);
  }

  /** The number of GPUs NVML sees (those the container runtime exposes, in a container). */
  public int deviceCount() {
    IntByReference count = new IntByReference();
    calls.call("nvmlDeviceGetCount_v2", "", () -> calls.api().nvmlDeviceGetCount_v2(count));
    return count.getValue();
  }

  /**
   * The GPU at NVML's enumeration position {@code index} (0 .. {@link #deviceCount()} - 1). In a
   * container that sees a subset of the GPUs this differs from {@link NvmlDevice#index()}.
   */
  public NvmlDevice device(int index) {
    PointerByReference handle = new PointerByReference();
    calls.call("nvmlDeviceGetHandleByIndex_v2", "position " + index, () -> calls.api().nvmlDeviceGetHandleByIndex_v2(index, handle));
    return new NvmlDevice(calls, handle.getValue(), "GPU " + index);
  }

  /** Every GPU, in enumeration order. */
  public List<NvmlDevice> devices() {
    int count = deviceCount();
    List<NvmlDevice> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      out.add(device(i));
    }
    return out;
  }

  /** The GPU with this UUID. */
  public NvmlDevice deviceByUuid(String uuid) {
    PointerByReference handle = new PointerByReference();
    calls.call("nvmlDeviceGetHandleByUUID", uuid, () -> calls.api().nvmlDeviceGetHandleByUUID(uuid, handle));
    return new NvmlDevice(calls, handle.getValue(), uuid);
  }

  /** A new, empty event set; close it when done. */
  public NvmlEventSet newEventSet() {
    PointerByReference set = new PointerByReference();
    calls.call("nvmlEventSetCreate", "", () -> calls.api().nvmlEventSetCreate(set));
    Pointer handle = set.getValue();
    return new NvmlEventSet(calls, handle);
  }

  /** Calls {@code nvmlShutdown} once; later calls do nothing. Devices of this instance stop working once no instance is open. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      calls.call("nvmlShutdown", "", () -> calls.api().nvmlShutdown());
    }
  }
}
