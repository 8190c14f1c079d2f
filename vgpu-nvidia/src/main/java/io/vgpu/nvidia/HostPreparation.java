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
 * create the host directories of its writable mounts (mode 0777, as HAMi does, because the container's
 * user is unknown) and write its host files (mode 0444, atomically: a container never sees half a
 * limits file, and libvgpu.so refuses one that lacks its last line, {@link
 * NvidiaContainerContract#LIMITS_FILE_END}). Idempotent. Removing them after the pod is gone is the node agent's business.
 */
public final class HostPreparation {
  private static final Set<PosixFilePermission> SHARED_DIRECTORY = PosixFilePermissions.fromString("rwxrwxrwx");

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

  private static void shareDirectory(Path directory) throws IOException {
    Files.createDirectories(directory);
    if (!Files.getPosixFilePermissions(directory).equals(SHARED_DIRECTORY)) {
      try {
        Files.setPosixFilePermissions(directory, SHARED_DIRECTORY);
      } catch (IOException e) {
        throw new IOException("cannot make " + directory + " writable for every container user: " + e.getMessage(), e);
      }
    }
  }
}
