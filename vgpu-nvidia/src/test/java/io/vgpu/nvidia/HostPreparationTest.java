package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.spi.ContainerContract;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node agent's host-side step for one container. */
class HostPreparationTest {

  private static String mode(Path path) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }

  @Test
  void createsWritableMountDirectoriesForAnyUserAndWritesHostFilesReadOnly(@TempDir Path hook) throws IOException {
    Path shared = hook.resolve("vgpu/containers/uid_main");
    Path limits = hook.resolve("vgpu/limits/uid_main");
    ContainerContract.Allocation allocation =
        new ContainerContract.Allocation(
            Map.of(),
            List.of(new ContainerContract.Mount("/usr/local/vgpu", shared.toString(), false), new ContainerContract.Mount("/etc/vgpu/limits", limits.toString(), true)),
            List.of(),
            List.of(new ContainerContract.HostFile(limits.toString(), "CUDA_DEVICE_MEMORY_LIMIT_0=1024m\n")));
    HostPreparation.prepare(allocation);
    assertThat(mode(shared)).isEqualTo("rwxrwxrwx");
    assertThat(Files.readString(limits)).isEqualTo("CUDA_DEVICE_MEMORY_LIMIT_0=1024m\n");
    assertThat(mode(limits)).isEqualTo("r--r--r--");
    assertThat(Files.exists(limits.resolveSibling("uid_main.tmp"))).isFalse();

    HostPreparation.prepare(allocation);
    assertThat(Files.list(limits.getParent())).containsExactly(limits);
  }
}
