package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The real {@code /proc}: a process is signalled only while it is still the named container's. */
class HostProcessesTest {
  private final HostProcesses host = HostProcesses.procfs();

  @Test
  void aProcessOutsideTheNamedContainerIsNeverSignalled() throws Exception {
    Process sleeper = new ProcessBuilder("sleep", "60").start();
    try {
      assertThat(host.cgroupOf((int) sleeper.pid())).hasValueSatisfying(text -> assertThat(text).contains(":"));
      KubeletCgroup elsewhere = new KubeletCgroup("8d6f2b1e-3c4a-4b5d-9e8f-0a1b2c3d4e5f", "c0ffee");
      assertThat(host.kill((int) sleeper.pid(), elsewhere)).isFalse();
      assertThat(sleeper.waitFor(200, TimeUnit.MILLISECONDS)).as("still running").isFalse();
    } finally {
      sleeper.destroyForcibly().waitFor();
    }
  }

  @Test
  void neitherItselfNorInitNorAProcessThatIsGone() throws Exception {
    KubeletCgroup any = new KubeletCgroup("8d6f2b1e-3c4a-4b5d-9e8f-0a1b2c3d4e5f", "c0ffee");
    assertThat(host.kill((int) ProcessHandle.current().pid(), any)).isFalse();
    assertThat(host.kill(1, any)).isFalse();
    Process done = new ProcessBuilder("true").start();
    done.waitFor();
    assertThat(host.cgroupOf((int) done.pid())).isEmpty();
    assertThat(host.kill((int) done.pid(), any)).isFalse();
  }
}
