package io.vgpu.examples.lab;

import io.vgpu.examples.lab.kubelet.ContainerRuntime;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.yaml.InputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * One lab run's directory: every file the run writes — kubeconfig, certificates, the device
 * configuration, each node's kubelet socket directory, hook path and mock machine, component logs,
 * each container's output — lives under it, so two runs on one machine never share a path. Removed at
 * the end unless the user asked to keep it.
 *
 * <p>Everything is world-readable and the tree world-traversable: container processes run as an
 * unprivileged user and must reach their mock driver state and shared regions, as they would reach a
 * host path a container runtime mounted for them. So the root must be reachable by that user — every
 * directory above it must let the user pass — and what containers execute or load from the checkout
 * (the probe, the mock driver) is {@linkplain #install copied in}: a checkout may lie where that user
 * cannot go, such as a clone in root's home (mode 0700).
 */
public final class LabWorkspace implements AutoCloseable {
  /** Unix socket paths longer than this do not fit {@code sockaddr_un}. */
  private static final int MAX_SOCKET_PATH = 107;

  private final Path root;
  private final boolean keep;

  private LabWorkspace(Path root, boolean keep) {
    this.root = root;
    this.keep = keep;
  }

  /** A fresh temporary workspace, removed on {@link #close}. */
  public static LabWorkspace temporary() {
    try {
      Path root = Files.createTempDirectory("vgpu-lab-");
      Optional<String> closed = closedToContainers(root);
      if (closed.isPresent()) {
        delete(root);
        throw new UnavailableException("the lab's temporary directory " + root + " (java.io.tmpdir) is out of reach of containers: " + closed.get());
      }
      open(root);
      return new LabWorkspace(root, false);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the lab's temporary directory", e);
    }
  }

  /**
   * A workspace the user keeps ({@code --keep DIR}): created when missing, else it must be empty.
   *
   * @throws InputException when the directory holds files already
   */
  public static LabWorkspace kept(Path dir) {
    Path root = dir.toAbsolutePath().normalize();
    try {
      if (Files.isDirectory(root)) {
        try (Stream<Path> entries = Files.list(root)) {
          if (entries.findAny().isPresent()) {
            throw new InputException("--keep: " + root + " is not empty (give a new or empty directory)");
          }
        }
      } else if (Files.exists(root)) {
        throw new InputException("--keep: " + root + " is not a directory");
      }
      // before creating anything there, and again after (a umask may close what was created)
      for (int pass = 0; pass < 2; pass++) {
        Optional<String> closed = closedToContainers(root);
        if (closed.isPresent()) {
          throw new InputException("--keep: " + root + " is out of reach of containers: " + closed.get() + "; keep the run in a directory every user can enter");
        }
        Files.createDirectories(root);
      }
      open(root);
      return new LabWorkspace(root, true);
    } catch (IOException e) {
      throw new InputException("--keep: cannot use " + root + ": " + e.getMessage());
    }
  }

  /**
   * Why the container user ({@link ContainerRuntime#CONTAINER_UID}, in its own group and no other) cannot
   * reach {@code dir}: the first directory above it that does not let that user search it, with its mode
   * and owner. Empty when every one does ({@code dir} itself is opened by the workspace). Of a path not
   * created yet, the directories above it that exist are judged.
   */
  static Optional<String> closedToContainers(Path dir) throws IOException {
    Path absolute = dir.toAbsolutePath().normalize();
    Path start = absolute.getParent();
    while (start != null && !Files.exists(start)) {
      start = start.getParent();
    }
    // the directories the kernel walks: those of the real path, symbolic links resolved
    for (Path p = start == null ? null : start.toRealPath(); p != null; p = p.getParent()) {
      int mode = (Integer) Files.getAttribute(p, "unix:mode");
      int uid = (Integer) Files.getAttribute(p, "unix:uid");
      int gid = (Integer) Files.getAttribute(p, "unix:gid");
      // The kernel checks one class only: owner if the uid matches, else group, else others.
      int searchBit = uid == ContainerRuntime.CONTAINER_UID ? 0100 : gid == ContainerRuntime.CONTAINER_UID ? 0010 : 0001;
      if ((mode & searchBit) == 0) {
        return Optional.of("user " + ContainerRuntime.CONTAINER_UID + ", as which containers run, cannot enter " + p
            + String.format(" (mode %04o, owner %d:%d)", mode & 07777, uid, gid));
      }
    }
    return Optional.empty();
  }

  private static void open(Path dir) throws IOException {
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** The run's root directory. */
  public Path root() {
    return root;
  }

  /** Whether the files stay after the run. */
  public boolean kept() {
    return keep;
  }

  /** A directory under the root (created, world-traversable). */
  public Path directory(String relative) {
    Path dir = root.resolve(relative);
    try {
      Files.createDirectories(dir);
      for (Path p = dir; !p.equals(root); p = p.getParent()) {
        open(p);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create " + dir, e);
    }
  }

  /** A file path under the root; its directory is created. */
  public Path file(String relative) {
    Path file = root.resolve(relative);
    directory(root.relativize(file.getParent()).toString());
    return file;
  }

  /**
   * A unix socket directory under the root.
   *
   * @throws InputException when sockets there would not fit a socket address
   */
  public Path socketDirectory(String relative, String longestSocketName) {
    Path dir = directory(relative);
    if (dir.resolve(longestSocketName).toString().length() > MAX_SOCKET_PATH) {
      throw new InputException("--keep: " + root + " is too long a path for the unix sockets the lab creates under it (at most "
          + (MAX_SOCKET_PATH - dir.toString().length() + root.toString().length()) + " characters); choose a shorter one");
    }
    return dir;
  }

  /**
   * Copies a file into {@code directory} under the root, readable and executable by every user, and
   * returns the copy: containers run as an unprivileged user that may not reach the original.
   */
  public Path install(Path source, String directory) {
    Path target = directory(directory).resolve(source.getFileName().toString());
    try {
      Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
      Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("r-xr-xr-x"));
      return target;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot copy " + source + " into the run", e);
    }
  }

  /**
   * {@link #install} on first use: the file is looked for, and copied, only when something asks for it
   * (so that a run that needs no probe needs none built).
   */
  public Supplier<Path> installOnFirstUse(Supplier<Path> source, String directory) {
    return new Supplier<>() {
      private Path installed;

      @Override
      public synchronized Path get() {
        if (installed == null) {
          installed = install(source.get(), directory);
        }
        return installed;
      }
    };
  }

  /** Writes a text file under the root. */
  public Path write(String relative, String content) {
    Path file = file(relative);
    try {
      Files.writeString(file, content);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  @Override
  public void close() {
    if (!keep) {
      delete(root);
    }
  }

  /** Deletes a tree; files that cannot be deleted (a mount still held by a dying process) are left. */
  static void delete(Path tree) {
    if (!Files.exists(tree)) {
      return;
    }
    try {
      Files.walkFileTree(tree, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          try {
            Files.deleteIfExists(file);
          } catch (IOException e) {
            // left behind
          }
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path dir, IOException exc) {
          try {
            Files.deleteIfExists(dir);
          } catch (IOException e) {
            // left behind
          }
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      // best effort
    }
  }
}
