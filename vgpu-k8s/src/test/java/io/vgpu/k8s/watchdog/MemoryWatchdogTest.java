package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.WatchdogConfig;
import io.vgpu.k8s.grant.GrantKey;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.grant.GrantVerifier;
import io.vgpu.k8s.grant.PodGrants;
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
  /** Cards whose processes NVML cannot list, with its error. */
  final Map<String, String> unlisted = new HashMap<>();

  private MemoryWatchdog watchdog(WatchdogConfig.Action action) {
    return watchdog(new WatchdogConfig(action, Duration.ofSeconds(1), Duration.ofSeconds(2), 512), PodGrants.unverified());
  }

  private MemoryWatchdog watchdog(WatchdogConfig config, PodGrants grants) {
    return new MemoryWatchdog(config, () -> new GpuProcesses.Sample(node.gpu, unlisted), () -> pods, new HookLayout(hook.toString()), grants, "n1", node,
        (pod, reason, message) -> events.add(new Event(pod, reason, message)), metrics, () -> now);
  }

  private static String cgroup(String containerId) {
    return "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + UID.replace('-', '_') + ".slice/cri-containerd-" + containerId + ".scope\n";
  }

  /** Pod {@code p}: container {@code gpu} granted 1024 MiB on GPU0, container {@code sidecar} nothing. */
  private Pod grantedPod() {
    Pod pod = new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("team").withUid(UID)
        .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1")
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
  void processesItCannotHoldToAPodsContainerAreReportedOnceAndNeverTouched() {
    grantedPod();
    node.run(301, "0::/system.slice/sshd.service\n", GPU0, 30000); // on the host, outside any pod
    node.run(302, "0::/kubepods/besteffort/pod99999999-0000-4000-8000-000000000000/feed\n", GPU0, 30000); // a pod not on this node
    node.run(303, cgroup("5ca1ab1e"), GPU0, 30000); // a container kubelet has not reported
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);

    pollFor(watchdog, 10);
    assertThat(node.killed).isEmpty();
    assertThat(events).isEmpty();
    assertThat(metrics.unmapped.labelValues(GPU0, "not-a-pod").get()).isEqualTo(1);
    assertThat(metrics.unmapped.labelValues(GPU0, "unknown-pod").get()).isEqualTo(1);
    assertThat(metrics.unmapped.labelValues(GPU0, "unknown-container").get()).isEqualTo(1);

    node.gpu.removeIf(p -> p.pid() == 301);
    pollFor(watchdog, 1);
    node.run(301, "0::/system.slice/sshd.service\n", GPU0, 30000);
    pollFor(watchdog, 1);
    assertThat(metrics.unmapped.labelValues(GPU0, "not-a-pod").get()).as("gone and back: a new report").isEqualTo(2);
  }

  // --- GPU use without a grant (issue 19, item 4) ---

  private static final String PLAIN_UID = "11111111-2222-3333-4444-555555555555";

  /** A pod in {@code namespace} that asks for no GPU and carries no grant, its container {@code c} running as cri-o's {@code abc}. */
  private Pod plainPod(String namespace, Map<String, String> annotations) {
    Pod plain = new PodBuilder().withNewMetadata().withName("plain").withNamespace(namespace).withUid(PLAIN_UID).addToAnnotations(annotations).endMetadata()
        .withNewSpec().addNewContainer().withName("c").addNewEnv().withName("NVIDIA_VISIBLE_DEVICES").withValue("all").endEnv().endContainer().endSpec()
        .withNewStatus().addNewContainerStatus().withName("c").withContainerID("cri-o://abc").endContainerStatus().endStatus().build();
    pods.add(plain);
    return plain;
  }

  private static final String PLAIN_CGROUP = "0::/kubepods/besteffort/pod" + PLAIN_UID + "/crio-abc\n";

  @Test
  void aContainerWithoutAGrantUsingACardIsKilledPastTheTolerance() {
    Pod plain = plainPod("team", Map.of());
    node.run(401, PLAIN_CGROUP, GPU1, 3000);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.REPORT); // the over-grant action is not the one that applies

    pollFor(watchdog, 2);
    assertThat(node.killed).containsExactly(401);
    assertThat(events).singleElement().satisfies(e -> {
      assertThat(e.pod()).isSameAs(plain);
      assertThat(e.reason()).isEqualTo("GpuUseWithoutGrant");
      assertThat(e.message()).isEqualTo(
          "container c: NVML saw 3000 MiB on " + GPU1 + " (pid 401) for 2.0 s without a grant (the pod holds no GPU grant), over the 512 MiB tolerance;"
              + " killed pid 401");
    });
    assertThat(metrics.withoutGrant.labelValues("team", "plain", "c").get()).isEqualTo(1);
    assertThat(overGrantCount("gpu")).isZero();
  }

  @Test
  void withReportUngrantedUseIsOnlyReported() {
    plainPod("team", Map.of());
    node.run(401, PLAIN_CGROUP, GPU1, 3000);
    WatchdogConfig config = WatchdogConfig.DEFAULT.withUngranted(WatchdogConfig.Action.REPORT, List.of());
    MemoryWatchdog watchdog = watchdog(config, PodGrants.unverified());
    pollFor(watchdog, 10);
    assertThat(node.killed).isEmpty();
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message()).endsWith("; reported only (watchdog ungranted.action: report)"));
  }

  @Test
  void withinTheToleranceOrInAnExemptNamespaceItIsLeftAlone() {
    plainPod("monitoring", Map.of());
    node.run(401, PLAIN_CGROUP, GPU1, 30000);
    MemoryWatchdog exempting = watchdog(WatchdogConfig.DEFAULT.withUngranted(WatchdogConfig.Action.KILL, List.of("monitoring")), PodGrants.unverified());
    pollFor(exempting, 10);
    assertThat(node.killed).isEmpty();
    assertThat(events).isEmpty();
    assertThat(metrics.unmapped.labelValues(GPU1, "exempt").get()).as("reported once").isEqualTo(1);

    node.gpu.clear();
    pods.clear();
    plainPod("team", Map.of());
    node.run(401, PLAIN_CGROUP, GPU1, 512);
    pollFor(watchdog(WatchdogConfig.Action.KILL), 10);
    assertThat(node.killed).isEmpty();
  }

  @Test
  void aGrantThatDoesNotVerifyIsNoGrant() {
    GrantKey key = GrantKey.random();
    PodGrants verified = PodGrants.verified(new GrantVerifier(() -> Optional.of(key), () -> now, Duration.ofSeconds(10)));
    String allocated = GPU1 + ",NVIDIA,40960,100:;";
    plainPod("team", Map.of(
        HamiAnnotations.ASSIGNED_NODE, "n1",
        HamiAnnotations.DEVICES_ALLOCATED, allocated,
        GrantSignature.ANNOTATION, new GrantSignature(key).sign("another-pods-uid", "n1", allocated)));
    node.run(401, PLAIN_CGROUP, GPU1, 3000);
    pollFor(watchdog(WatchdogConfig.DEFAULT, verified), 2);
    assertThat(node.killed).containsExactly(401);
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message())
        .contains("without a grant (its grant is not the scheduler's: its vgpu.io/grant-signature does not match the pod's UID, node and grant)"));
  }

  @Test
  void theLimitsFileTheAgentWroteIsTheGrantWhateverTheAnnotationSays() throws Exception {
    // Allocate gave container gpu 1024 MiB on GPU0; the key was replaced since, so no signature verifies
    PodGrants keyless = PodGrants.verified(new GrantVerifier(Optional::empty, () -> now, Duration.ofSeconds(10)));
    grantedPod();
    java.nio.file.Files.createDirectories(hook.resolve("vgpu/limits"));
    java.nio.file.Files.writeString(hook.resolve("vgpu/limits/" + UID + "_gpu"),
        "# vgpu limits of pod team/p container gpu\n# devices: " + GPU0 + "\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\nEND\n");
    node.run(101, cgroup(CID), GPU0, 1500);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.DEFAULT, keyless);
    pollFor(watchdog, 5);
    assertThat(node.killed).isEmpty();
    node.gpu.clear();
    node.run(101, cgroup(CID), GPU0, 1600);
    pollFor(watchdog, 2);
    assertThat(node.killed).containsExactly(101);
    assertThat(events).singleElement().satisfies(e -> assertThat(e.reason()).isEqualTo("GpuMemoryOverGrant"));
  }

  @Test
  void aCardWhoseProcessesCannotBeListedIsAWarningOncePerEpisodeAndAGauge() {
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);
    unlisted.put(GPU1, "GPU is lost");
    pollFor(watchdog, 3);
    assertThat(metrics.unlistedCards.labelValues(GPU1).get()).isEqualTo(1);
    unlisted.clear();
    pollFor(watchdog, 0);
    assertThat(metrics.unlistedCards.labelValues(GPU1).get()).isEqualTo(0);
  }

  @Test
  void perPodSeriesAreForgottenOnceThePodIsGone() {
    Pod plain = plainPod("team", Map.of());
    grantedPod();
    node.run(401, PLAIN_CGROUP, GPU1, 3000);
    node.run(101, cgroup(CID), GPU0, 4024);
    MemoryWatchdog watchdog = watchdog(WatchdogConfig.Action.KILL);
    pollFor(watchdog, 2);
    assertThat(metrics.withoutGrant.collect().getDataPoints()).hasSize(1);
    assertThat(metrics.overGrant.collect().getDataPoints()).hasSize(1);

    pods.remove(plain);
    pollFor(watchdog, 0);
    assertThat(metrics.withoutGrant.collect().getDataPoints()).isEmpty();
    assertThat(metrics.overGrant.collect().getDataPoints()).as("a pod still here keeps its count").hasSize(1);
    pods.clear();
    pollFor(watchdog, 0);
    assertThat(metrics.overGrant.collect().getDataPoints()).isEmpty();
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
    MemoryWatchdog watchdog = new MemoryWatchdog(WatchdogConfig.DEFAULT, () -> GpuProcesses.Sample.of(reused.gpu), () -> pods, new HookLayout(hook.toString()),
        PodGrants.unverified(), "n1", reused, (pod, reason, message) -> events.add(new Event(pod, reason, message)), metrics, () -> now);
    pollFor(watchdog, 2);
    assertThat(reused.killed).isEmpty();
    assertThat(events).singleElement().satisfies(e -> assertThat(e.message()).endsWith("; no process left to kill"));
  }

  /** Under KAI: a fraction container held to its grant file, a whole-card container to the card kubelet gave it. */
  @Test
  void underKaiAFractionContainerIsHeldToItsGrantFileAndAWholeCardContainerToItsCard() throws Exception {
    Pod pod = new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("team").withUid(UID).addToAnnotations("gpu-memory", "20480").endMetadata()
        .withNewSpec().addNewContainer().withName("gpu").endContainer().addNewContainer().withName("sidecar")
        .withNewResources().addToLimits("nvidia.com/gpu", new io.fabric8.kubernetes.api.model.Quantity("1")).endResources().endContainer().endSpec()
        .withNewStatus().withPhase("Running")
        .addNewContainerStatus().withName("gpu").withContainerID("containerd://" + CID).endContainerStatus()
        .addNewContainerStatus().withName("sidecar").withContainerID("containerd://" + SIDECAR_CID).endContainerStatus()
        .endStatus().build();
    pods.add(pod);
    HookLayout layout = new HookLayout(hook.toString());
    io.vgpu.nvidia.HostPreparation.writeProtected(Path.of(layout.kaiLimitsFile(UID, "gpu")),
        new io.vgpu.nvidia.NvidiaContainerContract(io.vgpu.api.spi.ContractSettings.DEFAULT.withHookPath(hook.toString()))
            .kaiLimitsFile(new io.vgpu.api.PodRef("team", "p"), UID, "gpu", List.of(new io.vgpu.api.DeviceGrant(GPU0, "NVIDIA", 2048, 0))));
    WholeCardGrants whole = new WholeCardGrants(() -> Optional.of(Map.of("team/p/sidecar", List.of(GPU1))), "nvidia.com/gpu", () -> java.util.Set.of(GPU0, GPU1));
    MemoryWatchdog watchdog = new MemoryWatchdog(new WatchdogConfig(WatchdogConfig.Action.KILL, Duration.ofSeconds(1), Duration.ofSeconds(2), 512),
        () -> new GpuProcesses.Sample(node.gpu, unlisted), () -> pods, layout, PodGrants.unverified(), "n1", whole, node,
        (p, reason, message) -> events.add(new Event(p, reason, message)), metrics, () -> now);
    node.run(201, cgroup(CID), GPU0, 2048 + 256); // within its grant plus the tolerance
    node.run(202, cgroup(SIDECAR_CID), GPU1, 30000); // its whole card
    pollFor(watchdog, 3);
    assertThat(node.killed).isEmpty();
    assertThat(events).isEmpty();

    node.run(203, cgroup(CID), GPU0, 1024); // 3328 MiB: over 2048 + 512
    node.run(204, cgroup(SIDECAR_CID), GPU0, 1024); // the whole-card container on a card it was not given
    pollFor(watchdog, 2);
    assertThat(node.killed).containsExactlyInAnyOrder(201, 203, 204);
    assertThat(events).extracting(e -> e.reason() + ": " + e.message())
        .containsExactlyInAnyOrder(
            "GpuMemoryOverGrant: container gpu: NVML saw 3328 MiB on " + GPU0 + " (pid 201,203) for 2.0 s, over its grant of 2048 MiB plus the 512 MiB tolerance; killed pid 201,203",
            "GpuMemoryOverGrant: container sidecar: NVML saw 1024 MiB on " + GPU0 + " (pid 204) for 2.0 s, over its grant of 0 MiB plus the 512 MiB tolerance; killed pid 204");
  }
}
