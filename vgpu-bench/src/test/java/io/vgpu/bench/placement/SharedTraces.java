package io.vgpu.bench.placement;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Where the real Alibaba trace lies for tests: it is not part of the repository but sits in {@code
 * shared/traces/alibaba-gpu-v2023} beside the checkout, on developers' machines and in CI. A git
 * worktree elsewhere finds it beside its main checkout. {@code -Dvgpu.trace.dir} overrides both.
 */
final class SharedTraces {
  private static final Path RELATIVE = Path.of("shared", "traces", "alibaba-gpu-v2023");

  private SharedTraces() {}

  /** The trace folder for the tests running in this JVM's working directory. */
  static Path dir() {
    String configured = System.getProperty("vgpu.trace.dir", "");
    return configured.isBlank() ? dir(Path.of("").toAbsolutePath()) : Path.of(configured);
  }

  /**
   * The trace folder seen from {@code start} (a folder inside a checkout): beside the checkout (the
   * nearest folder above holding {@code mvnw}), else beside the main checkout when the checkout is a
   * git worktree; the first of them when neither exists.
   */
  static Path dir(Path start) {
    Path root = start.toAbsolutePath().normalize();
    while (root.getParent() != null && !Files.exists(root.resolve("mvnw"))) {
      root = root.getParent();
    }
    List<Path> candidates = new ArrayList<>();
    candidates.add(besideOf(root));
    Path main = mainCheckoutOf(root);
    if (main != null) {
      candidates.add(besideOf(main));
    }
    return candidates.stream().filter(Files::isDirectory).findFirst().orElse(candidates.get(0));
  }

  private static Path besideOf(Path checkout) {
    Path parent = checkout.getParent();
    return (parent == null ? checkout : parent).resolve(RELATIVE);
  }

  /** For a worktree, whose {@code .git} is a file {@code gitdir: <main>/.git/worktrees/<name>}, the main checkout. */
  private static @Nullable Path mainCheckoutOf(Path checkout) {
    Path git = checkout.resolve(".git");
    if (!Files.isRegularFile(git)) {
      return null;
    }
    String line;
    try {
      line = Files.readString(git).trim();
    } catch (IOException e) {
      return null;
    }
    if (!line.startsWith("gitdir:")) {
      return null;
    }
    Path gitDir = checkout.resolve(line.substring("gitdir:".length()).trim()).normalize();
    Path worktrees = gitDir.getParent();
    Path commonDir = worktrees == null ? null : worktrees.getParent();
    if (commonDir == null || commonDir.getFileName() == null || !commonDir.getFileName().toString().equals(".git")) {
      return null;
    }
    return commonDir.getParent();
  }
}
