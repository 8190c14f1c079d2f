package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContractSettings;
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
    assertThat((Integer) Files.getAttribute(shared, "unix:mode") & 07777).as("sticky: no user deletes another's files").isEqualTo(01777);
    assertThat(Files.readString(limits)).isEqualTo("CUDA_DEVICE_MEMORY_LIMIT_0=1024m\n");
    assertThat(mode(limits)).isEqualTo("r--r--r--");
    assertThat(Files.exists(limits.resolveSibling("uid_main.tmp"))).isFalse();

    HostPreparation.prepare(allocation);
    assertThat(Files.list(limits.getParent())).containsExactly(limits);
  }

  @Test
  void everyVgpuContainerGetsACompleteLimitsFileOnTheHost(@TempDir Path hook) throws IOException {
    ContainerContract contract = new NvidiaContainerContract(ContractSettings.DEFAULT.withHookPath(hook.toString()));
    ContainerGrant grant = new ContainerGrant("main", List.of(new DeviceGrant("GPU-12345678-1234-1234-1234-123456780000", "NVIDIA", 2048, 30)));
    ContainerContract.Allocation allocation = contract.allocate(new PodRef("ml", "train"), "uid", grant, Map.of());
    HostPreparation.prepare(allocation);
    Path limits = hook.resolve("vgpu/limits/uid_main");
    assertThat(Files.readString(limits))
        .startsWith("# vgpu limits of pod ml/train container main\n")
        .contains("\nCUDA_DEVICE_MEMORY_LIMIT_0=2048m\n")
        .endsWith("\n" + NvidiaContainerContract.LIMITS_FILE_END + "\n");
    assertThat(mode(limits)).isEqualTo("r--r--r--");
  }

  @Test
  void stickyModeIsRestoredOnAnExistingDirectory(@TempDir Path hook) throws IOException {
    Path shared = Files.createDirectories(hook.resolve("vgpu/containers/uid_main"));
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    HostPreparation.shareDirectory(shared);
    assertThat((Integer) Files.getAttribute(shared, "unix:mode") & 07777).isEqualTo(01777);
  }

  @Test
  void protectedFilesLieReadOnlyInADirectoryOnlyTheAgentWrites(@TempDir Path hook) throws IOException {
    Path limits = hook.resolve("vgpu/kai/uid_main/limits");
    assertThat(HostPreparation.writeProtected(limits, "END\n")).isTrue();
    assertThat(HostPreparation.writeProtected(limits, "END\n")).as("unchanged content is not rewritten").isFalse();
    assertThat(Files.readString(limits)).isEqualTo("END\n");
    assertThat(mode(limits)).isEqualTo("r--r--r--");
    assertThat(mode(limits.getParent())).isEqualTo("rwxr-xr-x");
  }
}
