package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SharedTracesTest {
  @TempDir Path work;

  @Test
  void aCheckoutFindsTheTraceBesideIt() throws Exception {
    Path module = Files.createDirectories(work.resolve("main/vgpu-bench"));
    Files.createFile(work.resolve("main/mvnw"));
    Path traces = Files.createDirectories(work.resolve("shared/traces/alibaba-gpu-v2023"));

    assertThat(SharedTraces.dir(module)).isEqualTo(traces);
    assertThat(SharedTraces.dir(work.resolve("main"))).isEqualTo(traces);
  }

  @Test
  void aWorktreeWithoutOneBesideItFindsTheMainCheckouts() throws Exception {
    Files.createDirectories(work.resolve("main/.git/worktrees/feature"));
    Files.createFile(work.resolve("main/mvnw"));
    Path traces = Files.createDirectories(work.resolve("shared/traces/alibaba-gpu-v2023"));
    Path module = Files.createDirectories(work.resolve("wt/feature/vgpu-bench"));
    Files.createFile(work.resolve("wt/feature/mvnw"));
    Files.writeString(work.resolve("wt/feature/.git"), "gitdir: " + work.resolve("main/.git/worktrees/feature") + "\n");

    assertThat(SharedTraces.dir(module)).isEqualTo(traces);

    // One beside the worktree itself comes first.
    Path own = Files.createDirectories(work.resolve("wt/shared/traces/alibaba-gpu-v2023"));
    assertThat(SharedTraces.dir(module)).isEqualTo(own);
  }

  @Test
  void withNeitherTheAnswerIsBesideTheCheckoutSoTheSkipMessageNamesIt() throws Exception {
    Path module = Files.createDirectories(work.resolve("ci/clone/vgpu-bench"));
    Files.createFile(work.resolve("ci/clone/mvnw"));
    Files.writeString(work.resolve("ci/clone/.git"), "not a gitdir line\n");

    assertThat(SharedTraces.dir(module)).isEqualTo(work.resolve("ci/shared/traces/alibaba-gpu-v2023"));
  }
}
