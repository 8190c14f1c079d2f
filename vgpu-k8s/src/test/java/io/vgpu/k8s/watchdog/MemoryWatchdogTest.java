package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.WatchdogConfig;
import io.vgpu.nvidia.HookLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The watchdog's poll over a scripted process table: who is summed with whom, who is killed or
 * reported, what the Event says, what is counted, and what is left alone.
 */
class MemoryWatchdogTest {
  private static final long MIB = 1L << 20;
  private static final String GPU0 = "GPU-0de0a100-0000-4000-8000-000000000000";
  private static final String GPU1 = "GPU-0de0a100-0000-4000-8000-000000000001";
  private static final String UID = "8d6f2b1e-3c4a-4b5d-9e8f-0a1b2c3d4e5f";
  private static final String CID = "c0ffee01";
  private static final String SIDECAR_CID = "c0ffee02";

  @TempDir Path hook;

  /** The node as the watchdog sees it: NVML's table and each process's cgroup file. */
  static class Node implements HostProcesses {
    final List<GpuProcesses.GpuProcess> gpu = new ArrayList<>();
    final Map<Integer, String> cgroups = new HashMap<>();
    final List<Integer> killed = new ArrayList<>();

    void run(int pid, String cgroup, String uuid, long mib) {
      cgroups.put(pid, cgroup);
      gpu.add(new GpuProcesses.GpuProcess(uuid, pid, mib * MIB));
    }

    @Override
    public Optional<String> cgroupOf(int pid) {
      return Optional.ofNullable(cgroups.get(pid));
    }

    @Override
    public boolean kill(int pid, KubeletCgroup owner) {
      if (!cgroupOf(pid).flatMap(KubeletCgroup::ofProcFile).equals(Optional.of(owner))) {
        return false;
      }
      killed.add(pid);
      cgroups.remove(pid);
      gpu.removeIf(p -> p.pid() == pid);
      return true;
    }
  }

  record Event(Pod pod, String reason, String message) {}

  final Node node = new Node();
  final List<Event> events = new ArrayList<>();
  final WatchdogMetrics metrics = new WatchdogMetrics();
  Instant now = Instant.parse("2026-12-01T20:00:00Z");
  final List<Pod> pods = new ArrayList<>();

  private MemoryWatchdog watchdog(WatchdogConfig.Action action) {
    WatchdogConfig config = new WatchdogConfig(action, Duration.ofSeconds(1), Duration.ofSeconds(2), 512);
    return new MemoryWatchdog(config, () -> List.copyOf(node.gpu), () -> pods, new HookLayout(hook.toString()), node,
        (pod, reason, message) -> events.add(new Event(pod, reason, message)), metrics, () -> now);
  }

  private static String cgroup(String containerId) {
    return "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + UID.replace('-', '_') + ".slice/cri-containerd-" + containerId + ".scope\n";
  }

  /** Pod {@code p}: container {@code gpu} granted 1024 MiB on GPU0, container {@code sidecar} nothing. */
  private Pod grantedPod() {
    Pod pod = new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("team").withUid(UID)
        .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, GPU0 + ",NVIDIA,1024,25:;;").endMetadata()
        .withNewSpec().addNewContainer().withName("gpu").endContainer().addNewContainer().withName("sidecar").endContainer().endSpec()
        .withNewStatus().withPhase("Running")
        .addNewContainerStatus().withName("gpu").withContainerID("containerd://" + CID).endContainerStatus()
        .addNewContainerStatus().withName("sidecar").withContainerID("containerd://" + SIDECAR_CID).endContainerStatus()
        .endStatus().build();
    pods.add(pod);
    return pod;
  }

  private void pollFor(MemoryWatchdog watchdog, int seconds) {
    for (int s = 0; s <= seconds; s++) {
      watchdog.poll();
      now = now.plusSeconds(1);
    }
  }

  private double overGrantCount(String container) {
    return metrics.overGrant.labelValues("team", "p", container).get();
  }

  @Test
  void killSumsTheContainersProcessesOnTheCardAndKillsThemAfterTheGracePeriod() {
    Pod pod = grantedPod();
    node.run(101, cgroup(CID), GPU0, 900);
    node.run(102, cgroup(CID), GPU0, 900); // 1800 MiB together: over 1024 + 512
    node.run(103, cgroup(CID), GPU1, 64); // the same container on a card it has no grant on, within the tolerance
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);

    pollFor(watchdog, 1);
    assertThat(node.killed).isEmpty();
    assertThat(watchdog.nvmlBytes(UID, "gpu", GPU0)).hasValue(1800 * MIB);
    pollFor(watchdog, 0);

    assertThat(node.killed).containsExactly(101, 102);
    assertThat(events).singleElement().satisfies(e -> {
      assertThat(e.pod()).isSameAs(pod);
      assertThat(e.reason()).isEqualTo("GpuMemoryOverGrant");
      assertThat(e.message()).isEqualTo(
          "container gpu: NVML saw 1800 MiB on " + GPU0 + " (pid 101,102) for 2.0 s, over its grant of 1024 MiB plus the 512 MiB tolerance;"
              + " killed pid 101,102");
    });
    assertThat(overGrantCount("gpu")).isEqualTo(1);

    pollFor(watchdog, 5);
    assertThat(node.killed).containsExactly(101, 102);
    assertThat(events).hasSize(1);
    assertThat(watchdog.nvmlBytes(UID, "gpu", GPU0)).hasValue(0);
    assertThat(watchdog.nvmlBytes(UID, "gpu", GPU1)).hasValue(64 * MIB);
  }

  @Test
  void reportLeavesTheProcessesRunningAndReportsOncePerEpisode() {
    grantedPod();
    node.run(101, cgroup(CID), GPU0, 4024);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.REPORT);

    pollFor(watchdog, 10);
    assertThat(node.killed).isEmpty();
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message()).isEqualTo(
        "container gpu: NVML saw 4024 MiB on " + GPU0 + " (pid 101) for 2.0 s, over its grant of 1024 MiB plus the 512 MiB tolerance;"
            + " reported only (watchdog action: report)"));
    assertThat(overGrantCount("gpu")).isEqualTo(1);

    node.gpu.clear();
    node.run(101, cgroup(CID), GPU0, 100);
    pollFor(watchdog, 1);
    node.gpu.clear();
    node.run(101, cgroup(CID), GPU0, 4024);
    pollFor(watchdog, 3);
    assertThat(events).as("a second episode").hasSize(2);
    assertThat(overGrantCount("gpu")).isEqualTo(2);
  }

  @Test
  void aContainerWithinItsGrantPlusToleranceIsNeverTouched() {
    grantedPod();
    node.run(101, cgroup(CID), GPU0, 1024 + 512);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);
    pollFor(watchdog, 30);
    assertThat(node.killed).isEmpty();
    assertThat(events).isEmpty();
    assertThat(overGrantCount("gpu")).isZero();
  }

  @Test
  void aSidecarWithoutAGrantIsHeldToNothingButTheTolerance() {
    grantedPod();
    node.run(101, cgroup(CID), GPU0, 1000);
    node.run(201, cgroup(SIDECAR_CID), GPU0, 600);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);
    pollFor(watchdog, 3);
    assertThat(node.killed).containsExactly(201);
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message()).startsWith("container sidecar: NVML saw 600 MiB on " + GPU0)
        .contains("over its grant of 0 MiB"));
  }

  @Test
  void processesItCannotHoldToAGrantAreReportedOnceAndNeverTouched() {
    grantedPod();
    Pod plain = new PodBuilder().withNewMetadata().withName("plain").withNamespace("team").withUid("11111111-2222-3333-4444-555555555555").endMetadata()
        .withNewSpec().addNewContainer().withName("c").endContainer().endSpec()
        .withNewStatus().addNewContainerStatus().withName("c").withContainerID("cri-o://abc").endContainerStatus().endStatus().build();
    pods.add(plain);
    node.run(301, "0::/system.slice/sshd.service\n", GPU0, 30000); // on the host, outside any pod
    node.run(302, "0::/kubepods/besteffort/pod99999999-0000-4000-8000-000000000000/feed\n", GPU0, 30000); // a pod not on this node
    node.run(303, cgroup("5ca1ab1e"), GPU0, 30000); // a container kubelet has not reported
    node.run(304, "0::/kubepods/besteffort/pod11111111-2222-3333-4444-555555555555/abc\n", GPU1, 30000); // a pod without GPU grants
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);

    pollFor(watchdog, 10);
    assertThat(node.killed).isEmpty();
    assertThat(events).isEmpty();
    assertThat(metrics.unmapped.labelValues(GPU0, "not-a-pod").get()).isEqualTo(1);
    assertThat(metrics.unmapped.labelValues(GPU0, "unknown-pod").get()).isEqualTo(1);
    assertThat(metrics.unmapped.labelValues(GPU0, "unknown-container").get()).isEqualTo(1);
    assertThat(metrics.unmapped.labelValues(GPU1, "no-grant").get()).isEqualTo(1);

    node.gpu.removeIf(p -> p.pid() == 301);
    pollFor(watchdog, 1);
    node.run(301, "0::/system.slice/sshd.service\n", GPU0, 30000);
    pollFor(watchdog, 1);
    assertThat(metrics.unmapped.labelValues(GPU0, "not-a-pod").get()).as("gone and back: a new report").isEqualTo(2);
  }

  @Test
  void aProcessWhoseCgroupChangedBeforeTheKillIsSpared() {
    grantedPod();
    Node reused = new Node() {
      @Override
      public boolean kill(int pid, KubeletCgroup owner) {
        cgroups.put(pid, "0::/system.slice/cron.service\n"); // the PID now names another process
        return super.kill(pid, owner);
      }
    };
    reused.run(101, cgroup(CID), GPU0, 4024);
    MemoryWatchdog watchdog = new MemoryWatchdog(WatchdogConfig.DEFAULT, () -> List.copyOf(reused.gpu), () -> pods, new HookLayout(hook.toString()),
        reused, (pod, reason, message) -> events.add(new Event(pod, reason, message)), metrics, () -> now);
    pollFor(watchdog, 2);
    assertThat(reused.killed).isEmpty();
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message()).endsWith("; no process left to kill"));
  }
}
