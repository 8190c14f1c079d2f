package io.vgpu.k8s.deviceplugin;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Platform;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Opens a file in a directory that a container can write, without trusting what is there: the last
 * path component is never followed if it is a symlink ({@code O_NOFOLLOW}), opening never waits
 * ({@code O_NONBLOCK}: a FIFO would otherwise block until a writer appears), and only a regular file
 * of the expected size is read — its type and size are taken from the descriptor that was opened, so
 * the name cannot be swapped in between.
 */
final class RegionFile implements AutoCloseable {
  private static final int O_RDONLY = 0;
  private static final int O_NONBLOCK = 04000;
  private static final int O_CLOEXEC = 02000000;
  private static final int ENOENT = 2;
  private static final int ELOOP = 40;

  /** Why a file was not read; {@link #NOT_YET} when it is simply not there (yet). */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    static final Refused NOT_YET = new Refused("");

    Refused(String reason) {
      super(reason, null, false, false);
    }

    /** Whether the file is only missing or still being created, which is not worth a report. */
    boolean notYet() {
      return this == NOT_YET;
    }
  }

  /** The few libc calls Java's file API cannot make. */
  private interface LibC extends Library {
    int open(String path, int flags) throws LastErrorException;

    int close(int fd) throws LastErrorException;

    long pread(int fd, byte[] buffer, long count, long offset) throws LastErrorException;
  }

  /** Loaded on first use, so that a node agent without a region to read never loads it. */
  private static final class Libc {
    static final LibC INSTANCE = com.sun.jna.Native.load(Platform.C_LIBRARY_NAME, LibC.class);
  }

  private final Path file;
  private final int fd;
  private final long size;

  private RegionFile(Path file, int fd, long size) {
    this.file = file;
    this.fd = fd;
    this.size = size;
  }

  /** O_NOFOLLOW differs between Linux architectures. */
  private static int noFollow() throws Refused {
    String arch = System.getProperty("os.arch");
    if (!Platform.isLinux()) {
      throw new Refused("cannot be opened safely: the node monitor reads regions on Linux only");
    }
    return switch (arch) {
      case "amd64", "x86_64", "s390x" -> 0400000;
      case "aarch64", "arm64", "ppc64le", "ppc64" -> 0100000;
      default -> throw new Refused("cannot be opened safely on architecture " + arch);
    };
  }

  /**
   * Opens {@code file} if it is a regular file of exactly {@code expectedSize} bytes.
   *
   * @throws Refused saying why not; {@link Refused#NOT_YET} when it is missing or empty (being created)
   */
  static RegionFile open(Path file, long expectedSize) throws Refused {
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | noFollow();
    int fd;
    try {
      fd = Libc.INSTANCE.open(file.toString(), flags);
    } catch (LastErrorException e) {
      if (e.getErrorCode() == ENOENT) {
        throw Refused.NOT_YET;
      }
      if (e.getErrorCode() == ELOOP) {
        throw new Refused(file + " is a symbolic link");
      }
      throw new Refused(file + " cannot be opened: " + e.getMessage());
    } catch (LinkageError e) {
      throw new Refused(file + " cannot be opened safely: libc is not available (" + e.getMessage() + ")");
    }
    try {
      return new RegionFile(file, fd, checkedSize(file, fd, expectedSize));
    } catch (Refused e) {
      closeQuietly(fd);
      throw e;
    }
  }

  private static long checkedSize(Path file, int fd, long expectedSize) throws Refused {
    BasicFileAttributes attributes;
    try {
      // The descriptor's own file, whatever the name points to by now.
      attributes = Files.readAttributes(Path.of("/proc/self/fd/" + fd), BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new Refused(file + " cannot be inspected: /proc is not mounted");
    } catch (IOException e) {
      throw new Refused(file + " cannot be inspected: " + e.getMessage());
    }
    if (!attributes.isRegularFile()) {
      throw new Refused(file + " is not a regular file");
    }
    if (attributes.size() == 0) {
      throw Refused.NOT_YET;
    }
    if (attributes.size() != expectedSize) {
      throw new Refused(file + " has " + attributes.size() + " bytes, not the region's " + expectedSize);
    }
    return attributes.size();
  }

  /** The file's size when it was opened. */
  long size() {
    return size;
  }

  /**
   * Reads {@code length} bytes at {@code offset}.
   *
   * @throws Refused when the file is shorter than that (it shrank) or cannot be read
   */
  byte[] read(long offset, int length) throws Refused {
    byte[] out = new byte[length];
    int done = 0;
    while (done < length) {
      byte[] chunk = done == 0 ? out : new byte[length - done];
      long n;
      try {
        n = Libc.INSTANCE.pread(fd, chunk, length - done, offset + done);
      } catch (LastErrorException e) {
        throw new Refused(file + " cannot be read: " + e.getMessage());
      }
      if (n <= 0) {
        throw new Refused(file + " shrank while being read");
      }
      if (chunk != out) {
        System.arraycopy(chunk, 0, out, done, (int) n);
      }
      done += (int) n;
    }
    return out;
  }

  @Override
  public void close() {
    closeQuietly(fd);
  }

  private static void closeQuietly(int fd) {
    try {
      Libc.INSTANCE.close(fd);
    } catch (LastErrorException e) {
      // Nothing was written; a failed close loses nothing.
    }
  }
}
