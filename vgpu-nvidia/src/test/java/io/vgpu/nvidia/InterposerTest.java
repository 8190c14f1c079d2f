package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** libvgpu.so travels in the jar and lands on the host as a real file, atomically and idempotently. */
class InterposerTest {

  @Test
  void installsTheBuiltLibraryAndThePreloadList(@TempDir Path hook) throws IOException {
    MockMachine.assumeBuilt("libvgpu.so");
    assertThat(Interposer.bundled()).as(Interposer.resource() + " is in target/classes").isTrue();
    Interposer.Installation first = Interposer.install(hook);
    assertThat(first.changed()).isTrue();
    assertThat(first.library()).isEqualTo(hook.resolve("vgpu/libvgpu.so"));
    assertThat(Files.readAllBytes(first.library())).isEqualTo(Files.readAllBytes(MockMachine.nativeDirectory().resolve("libvgpu.so")));
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(first.library()))).isEqualTo("rwxr-xr-x");
    assertThat(Files.readString(first.preloadFile())).isEqualTo(hook.resolve("vgpu/libvgpu.so") + "\n");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(first.preloadFile()))).isEqualTo("rw-r--r--");
    assertThat(Files.list(hook.resolve("vgpu")).map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("libvgpu.so", "ld.so.preload");
  }

  @Test
  void installingAgainChangesNothingAndAChangedFileIsReplacedNotRewritten(@TempDir Path hook) throws IOException {
    MockMachine.assumeBuilt("libvgpu.so");
    Interposer.install(hook);
    Object inode = Files.getAttribute(hook.resolve("vgpu/libvgpu.so"), "unix:ino");
    assertThat(Interposer.install(hook).changed()).isFalse();
    assertThat(Files.getAttribute(hook.resolve("vgpu/libvgpu.so"), "unix:ino")).isEqualTo(inode);

    Files.writeString(hook.resolve("vgpu/libvgpu.so"), "an older build");
    Object stale = Files.getAttribute(hook.resolve("vgpu/libvgpu.so"), "unix:ino");
    assertThat(Interposer.install(hook).changed()).isTrue();
    assertThat(Files.getAttribute(hook.resolve("vgpu/libvgpu.so"), "unix:ino")).as("a new inode: mapped copies stay intact").isNotEqualTo(stale);
  }

  @Test
  void anAgentInAContainerNamesTheLibraryAsContainersSeeIt(@TempDir Path mounted) throws IOException {
    MockMachine.assumeBuilt("libvgpu.so");
    Interposer.Installation done = Interposer.install(mounted, "/usr/local/vgpu/libvgpu.so");
    assertThat(Files.readString(done.preloadFile())).isEqualTo("/usr/local/vgpu/libvgpu.so\n");
    assertThat(done.library()).isEqualTo(mounted.resolve("libvgpu.so"));
  }

  @Test
  void theResourceIsNamedAfterTheBuildPlatform() {
    assertThat(Interposer.resource()).matches("io/vgpu/nvidia/native/linux-[a-z0-9_]+/libvgpu\\.so");
  }
}
