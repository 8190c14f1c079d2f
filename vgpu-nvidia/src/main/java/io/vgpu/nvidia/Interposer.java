package io.vgpu.nvidia;

import io.vgpu.nvidia.internal.AtomicFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Installs libvgpu.so, which this jar carries, on a node: the node agent calls {@link #install} at
 * start, before it answers any allocation. It writes into {@code <HOOK_PATH>/vgpu}:
 *
 * <ul>
 *   <li>{@code libvgpu.so} (mode 0755), copied from the jar resource {@link #resource()};
 *   <li>{@code ld.so.preload} (mode 0644), one line naming the library's path in containers, which
 *       the container contract mounts at {@code /etc/ld.so.preload}.
 * </ul>
 *
 * Each file is replaced atomically (temporary file, fsync, rename), so containers that already map the
 * old library keep running on it and new ones get the new one; an unchanged file is left alone, so
 * installing again is cheap and idempotent. The library is copied by this class, not extracted through
 * JNA, because JNA deletes its extracted copies.
 */
public final class Interposer {
  private Interposer() {}

  /**
   * The result of an installation.
   *
   * @param library the library on the host
   * @param preloadFile the preload list on the host
   * @param changed whether either file was written (false: both were already up to date)
   */
  public record Installation(Path library, Path preloadFile, boolean changed) {}

  /**
   * The class-path resource of libvgpu.so for this JVM's platform, e.g. {@code
   * io/vgpu/nvidia/native/linux-x86_64/libvgpu.so} (the platform names of the build's
   * os-maven-plugin).
   */
  public static String resource() {
    return "io/vgpu/nvidia/native/" + platform() + "/" + HookLayout.LIBRARY_NAME;
  }

  /** Whether this jar carries libvgpu.so for this platform (a build without a C compiler does not). */
  public static boolean bundled() {
    return Interposer.class.getClassLoader().getResource(resource()) != null;
  }

  /**
   * Installs libvgpu.so and the preload list under {@code <hookPath>/vgpu}, where containers find the
   * library at the same path (HAMi's layout).
   *
   * @throws IllegalStateException when this jar carries no libvgpu.so for this platform
   * @throws IOException naming the file that could not be written
   */
  public static Installation install(Path hookPath) throws IOException {
    HookLayout layout = new HookLayout(hookPath.toAbsolutePath().normalize().toString());
    return install(Path.of(layout.vgpuDirectory()), layout.library());
  }

  /**
   * Installs into {@code vgpuDirectory} for a node agent that sees the host's {@code <HOOK_PATH>/vgpu}
   * at another path (e.g. a mount in its own container).
   *
   * @param vgpuDirectory the host's {@code <HOOK_PATH>/vgpu} as this process sees it
   * @param containerLibrary the library's path inside containers, written into {@code ld.so.preload}
   * @throws IllegalStateException when this jar carries no libvgpu.so for this platform
   * @throws IOException naming the file that could not be written
   */
  public static Installation install(Path vgpuDirectory, String containerLibrary) throws IOException {
    if (!containerLibrary.startsWith("/") || containerLibrary.contains("\n")) {
      throw new IllegalArgumentException("the library's path in containers '" + containerLibrary + "' must be an absolute path");
    }
    Path library = vgpuDirectory.resolve(HookLayout.LIBRARY_NAME);
    Path preload = vgpuDirectory.resolve("ld.so.preload");
    boolean libraryChanged = AtomicFiles.write(library, libraryBytes(), "rwxr-xr-x");
    boolean preloadChanged = AtomicFiles.write(preload, (containerLibrary + "\n").getBytes(StandardCharsets.UTF_8), "rw-r--r--");
    return new Installation(library, preload, libraryChanged || preloadChanged);
  }

  private static byte[] libraryBytes() throws IOException {
    try (InputStream in = Interposer.class.getClassLoader().getResourceAsStream(resource())) {
      if (in == null) {
        throw new IllegalStateException(
            "this vgpu-nvidia jar carries no libvgpu.so for " + platform() + " (" + resource()
                + "): it was built without a C compiler or on another platform; build vgpu-native with gcc and make");
      }
      return in.readAllBytes();
    }
  }

  /** {@code <os>-<arch>} as os-maven-plugin names the build platform. */
  private static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]", "");
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String normalized =
        switch (arch) {
          case "amd64", "x86_64", "x8664" -> "x86_64";
          case "aarch64", "arm64" -> "aarch_64";
          case "ppc64le" -> "ppcle_64";
          default -> arch;
        };
    return os + "-" + normalized;
  }
}
