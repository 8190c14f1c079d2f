package io.vgpu.examples.lab.kubelet;

import java.nio.file.Path;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Where a node's own paths lie in the lab: every node is a directory of the run, so a path a pod names
 * on its node ({@code hostPath}) is relocated there and never touches the machine. The places the lab
 * gives vgpu's node agent a directory of its own — the hook path, as {@code --hook-path} places it — map
 * to that directory, on the node and in containers alike (the interposer's path is the same on the
 * host and in a container: the preload file names it); every other node path lies under the node's
 * simulated root.
 */
public final class NodePaths {
  private final Path root;
  private final Map<String, Path> relocated;

  /**
   * The paths of one node.
   *
   * @param root the node's simulated root: {@code /a/b} on the node is {@code root/a/b}
   * @param relocated node directories the lab placed elsewhere (such as {@code /usr/local/vgpu}), by
   *     their absolute path on the node
   */
  public NodePaths(Path root, Map<String, Path> relocated) {
    this.root = root;
    Map<String, Path> copy = new LinkedHashMap<>();
    relocated.entrySet().stream()
        .sorted(Comparator.comparingInt((Map.Entry<String, Path> e) -> e.getKey().length()).reversed())
        .forEach(e -> copy.put(normal(e.getKey()), e.getValue()));
    this.relocated = copy;
  }

  /** The node's simulated root. */
  public Path root() {
    return root;
  }

  /**
   * Where a path of the node lies in the lab.
   *
   * @param nodePath an absolute path on the node
   * @throws IllegalArgumentException for a relative path
   */
  public Path onNode(String nodePath) {
    String path = normal(nodePath);
    return relocatedPath(path).orElseGet(() -> path.equals("/") ? root : root.resolve(path.substring(1)));
  }

  /**
   * Where a container's mount target lies: a relocated node directory is relocated in the container
   * too; any other path is the container's own.
   */
  public String inContainer(String containerPath) {
    String path = normal(containerPath);
    return relocatedPath(path).map(Path::toString).orElse(path);
  }

  private Optional<Path> relocatedPath(String path) {
    for (Map.Entry<String, Path> e : relocated.entrySet()) {
      String prefix = e.getKey();
      if (path.equals(prefix)) {
        return Optional.of(e.getValue());
      }
      if (path.startsWith(prefix.endsWith("/") ? prefix : prefix + "/")) {
        return Optional.of(e.getValue().resolve(path.substring(prefix.length()).replaceFirst("^/", "")));
      }
    }
    return Optional.empty();
  }

  /** An absolute path with {@code .} and {@code ..} resolved (never above {@code /}). */
  private static String normal(String path) {
    if (path == null || !path.startsWith("/")) {
      throw new IllegalArgumentException("path '" + path + "' is not absolute");
    }
    return Path.of(path).normalize().toString();
  }
}
