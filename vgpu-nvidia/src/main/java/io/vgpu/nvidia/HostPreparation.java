package io.vgpu.nvidia;

import io.vgpu.api.spi.ContainerContract;
import io.vgpu.nvidia.internal.AtomicFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * What the node agent does on the host for a container's allocation before answering the kubelet:
 * create the host directories of its writable mounts (mode 1777: any container user may create files,
 * because that user is unknown, and the sticky bit keeps one user from deleting or renaming another's,
 * e.g. the shared region a second user in the same container relies on) and write its host files (mode 0444, atomically: a container never sees half a
 * limits file, and libvgpu.so refuses one that lacks its last line, {@link
 * NvidiaContainerContract#LIMITS_FILE_END}). Idempotent. Removing them after the pod is gone is the node agent's business.
 */
public final class HostPreparation {
  /** {@code rwxrwxrwt}: world-writable with the sticky bit (NIO's permission sets cannot express the sticky bit). */
  private static final int SHARED_DIRECTORY_MODE = 01777;
  /** The permission bits {@code unix:mode} reports besides the file type. */
  private static final int MODE_BITS = 07777;
  private static final Set<PosixFilePermission> GRANT_DIRECTORY = PosixFilePermissions.fromString("rwxr-xr-x");

  private HostPreparation() {}

  /**
   * Prepares the host for one container.
   *
   * @throws IOException naming the path that could not be created or written
   */
  public static void prepare(ContainerContract.Allocation allocation) throws IOException {
    for (ContainerContract.Mount mount : allocation.mounts()) {
      if (!mount.readOnly()) {
        shareDirectory(Path.of(mount.hostPath()));
      }
    }
    for (ContainerContract.HostFile file : allocation.hostFiles()) {
      AtomicFiles.write(Path.of(file.hostPath()), file.content().getBytes(StandardCharsets.UTF_8), "r--r--r--");
    }
  }

  /**
   * Creates a container's writable directory (mode 1777), e.g. {@code <hook>/vgpu/containers/<uid>_<name>}
   * of a KAI fraction container before its grant is written. Idempotent.
   *
   * @throws IOException naming the directory
   */
  public static void shareDirectory(Path directory) throws IOException {
    Files.createDirectories(directory);
    try {
      int mode = (Integer) Files.getAttribute(directory, "unix:mode") & MODE_BITS;
      if (mode != SHARED_DIRECTORY_MODE) {
        Files.setAttribute(directory, "unix:mode", SHARED_DIRECTORY_MODE);
      }
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      throw new IOException("cannot make " + directory + " writable for every container user (mode 1777): " + e.getMessage(), e);
    }
  }

  /**
   * Writes a file only the node agent may change: its directory mode 0755, the file mode 0444, replaced
   * atomically (a reader sees the old content or the new one). Idempotent.
   *
   * @return whether the file was written (false when it already held {@code content})
   * @throws IOException naming the path
   */
  public static boolean writeProtected(Path file, String content) throws IOException {
    Path directory = file.toAbsolutePath().getParent();
    Files.createDirectories(directory);
    if (!Files.getPosixFilePermissions(directory).equals(GRANT_DIRECTORY)) {
      Files.setPosixFilePermissions(directory, GRANT_DIRECTORY);
    }
    return AtomicFiles.write(file, content.getBytes(StandardCharsets.UTF_8), "r--r--r--");
  }
}
