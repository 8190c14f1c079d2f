package io.vgpu.nvidia.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.Set;

/**
 * Replaces files so that a reader sees the old content or the new one, never a mix: write a temporary
 * file in the same directory, flush it to disk, rename it over the target, flush the directory. This
 * also matters for libraries: running processes keep mapping the old inode, whereas rewriting a mapped
 * library in place would crash them.
 */
public final class AtomicFiles {
  private AtomicFiles() {}

  /**
   * Makes {@code target} hold exactly {@code content} with {@code permissions} (e.g. {@code rw-r--r--}),
   * creating its directory; does nothing when it already does.
   *
   * @return whether the file was written
   */
  public static boolean write(Path target, byte[] content, String permissions) throws IOException {
    Set<PosixFilePermission> mode = PosixFilePermissions.fromString(permissions);
    Path directory = target.toAbsolutePath().getParent();
    Files.createDirectories(directory);
    if (Files.isRegularFile(target)
        && Files.getPosixFilePermissions(target).equals(mode)
        && Arrays.equals(Files.readAllBytes(target), content)) {
      return false;
    }
    Path temporary = Files.createTempFile(directory, "." + target.getFileName(), ".tmp");
    try {
      try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
        ByteBuffer buffer = ByteBuffer.wrap(content);
        while (buffer.hasRemaining()) {
          channel.write(buffer);
        }
        channel.force(true);
      }
      Files.setPosixFilePermissions(temporary, mode);
      try {
        Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        throw new IOException("cannot replace " + target + " atomically: " + e.getMessage(), e);
      }
    } finally {
      Files.deleteIfExists(temporary);
    }
    try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
      dir.force(true);
    }
    return true;
  }
}
