package io.vgpu.examples.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.yaml.InputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Containers run as nobody: a run's directory must be reachable by that user, and what containers
 * execute is copied into it from a checkout that user may not be able to enter.
 */
class LabWorkspaceTest {
  @TempDir Path temp;

  @Test
  void aKeptRunUnderADirectoryNobodyCanEnterIsRefusedNamingThatDirectory() throws Exception {
    Path home = Files.createDirectory(temp.resolve("home"));
    Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx------"));

    assertThatThrownBy(() -> LabWorkspace.kept(home.resolve("runs/one")))
        .isInstanceOf(InputException.class)
        .hasMessageStartingWith("--keep: " + home.resolve("runs/one") + " is out of reach of containers: user 65534, as which containers run, cannot enter "
            + home.toRealPath() + " (mode 0700, owner ");
    assertThat(home.resolve("runs")).as("nothing is created there").doesNotExist();
  }

  @Test
  void aRunUnderDirectoriesEveryoneMayEnterIsKept() throws Exception {
    Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-x--x"));
    try (LabWorkspace workspace = LabWorkspace.kept(temp.resolve("run"))) {
      assertThat(workspace.root()).isDirectory();
      assertThat(Files.getPosixFilePermissions(workspace.root())).isEqualTo(PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }

  @Test
  void anInstalledFileIsACopyEveryUserMayReadAndExecute() throws Exception {
    Path checkout = Files.createDirectory(temp.resolve("checkout"));
    Path probe = Files.writeString(checkout.resolve("vgpu-lab-probe"), "#!/bin/sh\necho probe\n");
    Files.setPosixFilePermissions(probe, PosixFilePermissions.fromString("rwx------"));
    Files.setPosixFilePermissions(checkout, PosixFilePermissions.fromString("rwx------"));
    Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
    try (LabWorkspace workspace = LabWorkspace.kept(temp.resolve("run"))) {
      Path installed = workspace.installOnFirstUse(() -> probe, "bin").get();

      assertThat(installed).isEqualTo(workspace.root().resolve("bin/vgpu-lab-probe")).hasContent("#!/bin/sh\necho probe\n");
      assertThat(Files.getPosixFilePermissions(installed)).isEqualTo(PosixFilePermissions.fromString("r-xr-xr-x"));
      assertThat(Files.getPosixFilePermissions(installed.getParent())).isEqualTo(PosixFilePermissions.fromString("rwxr-xr-x"));
      assertThat(LabWorkspace.closedToContainers(installed)).isEmpty();
    }
  }
}
