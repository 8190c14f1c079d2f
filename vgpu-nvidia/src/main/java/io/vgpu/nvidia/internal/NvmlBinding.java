package io.vgpu.nvidia.internal;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The process's one {@code libnvidia-ml.so.1}: loaded once (NVML's state is per process anyway), with
 * its interface-mapped functions ({@link NvmlLibrary}) and the direct-mapped hot calls ({@link
 * NvmlHotCalls}) bound to it.
 *
 * <p>Search order without an explicit file: JNA's ({@code jna.library.path}, then the dynamic
 * linker, which honours {@code LD_LIBRARY_PATH} and the {@code ldconfig} cache), then the driver
 * directories that container setups mount outside the linker's view ({@link #DRIVER_DIRECTORIES}).
 * Nothing else: never a bundled or mock library.
 */
public final class NvmlBinding {
  /** The library's SONAME. */
  public static final String LIBRARY = "libnvidia-ml.so.1";

  /**
   * Driver directories tried after the linker: the NVIDIA container toolkit's {@code
   * /usr/local/nvidia} mount and the GPU Operator's driver container.
   */
  public static final List<Path> DRIVER_DIRECTORIES =
      List.of(
          Path.of("/usr/local/nvidia/lib64"),
          Path.of("/run/nvidia/driver/usr/lib/x86_64-linux-gnu"),
          Path.of("/run/nvidia/driver/usr/lib64"));

  private static @Nullable NvmlBinding loaded;

  private final NvmlLibrary api;
  private final String source;

  private NvmlBinding(NvmlLibrary api, String source) {
    this.api = api;
    this.source = source;
  }

  /** The interface-mapped functions. */
  public NvmlLibrary api() {
    return api;
  }

  /** Where the library was loaded from: its file when JNA knows it, else the name the linker resolved. */
  public String source() {
    return source;
  }

  /**
   * Loads NVML, or returns the binding already loaded in this process.
   *
   * @param file a specific {@code libnvidia-ml.so.1}, or {@code null} to search
   * @throws LoadFailure with a one-line reason when the library is missing or too old
   */
  public static synchronized NvmlBinding load(@Nullable Path file) throws LoadFailure {
    if (file != null && !Files.isRegularFile(file)) {
      throw new LoadFailure(file + " does not exist: no NVML library to load");
    }
    NvmlBinding current = loaded;
    if (current != null) {
      if (file != null && !current.source.equals(file.toAbsolutePath().normalize().toString())) {
        throw new LoadFailure("NVML is already loaded from " + current.source + " in this process; " + file + " cannot be loaded as well");
      }
      return current;
    }
    NativeLibrary library;
    if (file != null) {
      try {
        library = NativeLibrary.getInstance(file.toAbsolutePath().toString());
      } catch (UnsatisfiedLinkError e) {
        throw new LoadFailure(file + " cannot be loaded: " + firstLine(e.getMessage()));
      }
    } else {
      library = search();
    }
    if (library == null) {
      throw new LoadFailure(
          LIBRARY + " (the NVIDIA driver's NVML) was not found in jna.library.path, LD_LIBRARY_PATH, the linker cache or "
              + DRIVER_DIRECTORIES.stream().map(Path::toString).collect(Collectors.joining(", "))
              + ": is the NVIDIA driver installed on this node?");
    }
    String source = Optional.ofNullable(library.getFile()).map(f -> f.toPath().toAbsolutePath().normalize().toString()).orElse(library.getName());
    try {
      Native.register(NvmlHotCalls.class, library);
    } catch (UnsatisfiedLinkError e) {
      throw new LoadFailure(LoadFailure.FUNCTION_NOT_FOUND, source + " is older than driver R510, which vgpu needs (" + firstLine(e.getMessage()) + ")");
    }
    // By the file found, not the short name: a short name makes JNA look for the unversioned
    // libnvidia-ml.so, which nodes with only the driver's libnvidia-ml.so.1 do not have.
    String path = Optional.ofNullable(library.getFile()).filter(f -> f.isAbsolute() && f.isFile()).map(f -> f.getPath()).orElse(file != null ? file.toAbsolutePath().toString() : LIBRARY);
    try {
      loaded = new NvmlBinding(Native.load(path, NvmlLibrary.class), source);
    } catch (UnsatisfiedLinkError e) {
      throw new LoadFailure(source + " cannot be loaded: " + firstLine(e.getMessage()));
    }
    return loaded;
  }

  private static @Nullable NativeLibrary search() {
    NativeLibrary library = open(LIBRARY);
    for (int i = 0; library == null && i < DRIVER_DIRECTORIES.size(); i++) {
      Path candidate = DRIVER_DIRECTORIES.get(i).resolve(LIBRARY);
      if (Files.isRegularFile(candidate)) {
        library = open(candidate.toString());
      }
    }
    return library;
  }

  private static @Nullable NativeLibrary open(String name) {
    try {
      return NativeLibrary.getInstance(name);
    } catch (UnsatisfiedLinkError e) {
      return null;
    }
  }

  private static String firstLine(@Nullable String text) {
    if (text == null) {
      return "no detail";
    }
    int newline = text.indexOf('\n');
    return newline < 0 ? text : text.substring(0, newline);
  }

  /** NVML could not be loaded; the message says why in one line. */
  public static final class LoadFailure extends Exception {
    private static final long serialVersionUID = 1L;
    /** {@code NVML_ERROR_LIBRARY_NOT_FOUND}. */
    public static final int LIBRARY_NOT_FOUND = 12;
    /** {@code NVML_ERROR_FUNCTION_NOT_FOUND}. */
    public static final int FUNCTION_NOT_FOUND = 13;

    private final int returnCode;

    LoadFailure(String message) {
      this(LIBRARY_NOT_FOUND, message);
    }

    LoadFailure(int returnCode, String message) {
      super(message);
      this.returnCode = returnCode;
    }

    /** The NVML code that describes the failure: library or function not found. */
    public int returnCode() {
      return returnCode;
    }
  }
}
