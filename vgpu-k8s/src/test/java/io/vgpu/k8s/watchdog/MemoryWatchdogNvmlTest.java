package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.WatchdogConfig;
import io.vgpu.k8s.deviceplugin.FakeKubelet;
import io.vgpu.k8s.deviceplugin.NodeAgent;
import io.vgpu.k8s.testing.NodeLocks;
import io.vgpu.nvidia.Nvml;
import io.vgpu.nvidia.NvidiaDeviceSource;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real node agent over vgpu-native's mock NVML, with real processes holding memory on the mock GPU
 * from inside cgroups named as kubelet names them: a container that escapes its 1024 MiB grant by 3000
 * MiB is killed (or, with {@code report}, only reported), its pod gets the Warning Event and the
 * counter counts it; a container within its grant, one whose interposer books more than NVML shows,
 * and a process outside any pod are never touched. Runs in the {@code mock-watchdog} surefire
 * execution (eight mock H100s, a state file of its own).
 */
@Tag("mock-watchdog")
@EnableKubernetesMockClient(crud = true)
class MemoryWatchdogNvmlTest {
  private static final String GPU0 = "GPU-12345678-1234-1234-1234-123456780000";
  private static final String GPU1 = "GPU-12345678-1234-1234-1234-123456780001";
  private static final Duration POLL = Duration.ofMillis(200);
  private static final Duration GRACE = Duration.ofSeconds(1);
  private static final long CONTEXT_MIB = 64; // the mock driver's context size (VGPU_MOCK_CONTEXT_MIB default)
  private static final Duration WAIT = Duration.ofSeconds(30);

  KubernetesClient client;
  @TempDir Path work;
  @TempDir Path kubeletDir;
  @TempDir Path hook;
  ContainerProcesses processes;
  FakeKubelet kubelet;
  NodeAgent agent;

  @BeforeEach
  void machine() throws Exception {
    processes = new ContainerProcesses(work);
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    kubelet = new FakeKubelet(kubeletDir);
  }

  @AfterEach
  void stop() throws Exception {
    if (agent != null) {
      agent.close();
    }
    if (kubelet != null) {
      kubelet.close();
    }
    if (processes != null) {
      processes.close();
    }
  }

  private void startAgent(WatchdogConfig.Action action) throws IOException, InterruptedException {
    startAgent(new WatchdogConfig(action, POLL, GRACE, 512));
  }

  private void startAgent(WatchdogConfig watchdog) throws IOException, InterruptedException {
    DeviceConfig config = DeviceConfig.builder().watchdog(watchdog).build();
    NvidiaDeviceSource gpus = new NvidiaDeviceSource(Nvml.open(), NvidiaDeviceSource.Options.DEFAULT);
    agent = NodeAgent.start(new NodeAgent.Options("n1", hook, kubeletDir, "nvidia-gpu.sock", "127.0.0.1:0", false), config, gpus, client, Clock.systemUTC());
    kubelet.awaitRegistration();
  }

  /**
   * A pod granted {@code mib} on GPU0 for its container {@code gpu}, bound and allocated as the
   * scheduler, kubelet and the agent leave it (limits file written), with the container running as
   * {@code containerId}.
   */
  private Pod allocated(String name, long mib, String containerId) {
    String grant = GPU0 + ",NVIDIA," + mib + ",0:;";
    Pod pod = client.pods().inNamespace("team").resource(new PodBuilder()
        .withNewMetadata().withName(name).withNamespace("team")
        .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, grant)
        .addToAnnotations(HamiAnnotations.DEVICES_TO_ALLOCATE, grant)
        .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1")
        .addToAnnotations(HamiAnnotations.BIND_PHASE, "allocating")
        .addToAnnotations(HamiAnnotations.BIND_TIME, "100")
        .addToLabels(HamiAnnotations.ASSIGNED_NODE, "n1")
        .endMetadata()
        .withNewSpec().withNodeName("n1").addNewContainer().withName("gpu").withImage("vgpu-lab/probe").endContainer().endSpec()
        .withNewStatus().withPhase("Running")
        .addNewContainerStatus().withName("gpu").withContainerID("containerd://" + containerId).withReady(true).endContainerStatus()
        .endStatus().build()).create();
    NodeLocks.lockFor(client, "n1", "team", name);
    kubelet.allocate(List.of(GPU0 + "-0"));
    assertThat(hook.resolve("vgpu/limits/" + pod.getMetadata().getUid() + "_gpu")).content().contains("CUDA_DEVICE_MEMORY_LIMIT_0=" + mib + "m");
    return pod;
  }

  private static String containerId() {
    byte[] id = new byte[32];
    ThreadLocalRandom.current().nextBytes(id);
    return HexFormat.of().formatHex(id);
  }

  @Test
  void aContainerEscapingItsGrantIsKilledWithAWarningEventAndACount() throws Exception {
    startAgent(WatchdogConfig.Action.KILL);
    String id = containerId();
    Pod pod = allocated("escape", 1024, id);
    long started = System.nanoTime();
    Process escaped = processes.hold(pod.getMetadata().getUid(), id, 3000, Map.of());

    assertThat(escaped.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("killed by the watchdog").isTrue();
    System.out.printf("killed %d ms after it held its memory (grace %d ms, poll %d ms)%n",
        (System.nanoTime() - started) / 1_000_000, GRACE.toMillis(), POLL.toMillis());
    assertThat(escaped.exitValue()).as("SIGKILL").isEqualTo(128 + 9);
    Event event = awaitEvent("escape");
    assertThat(event.getType()).isEqualTo("Warning");
    assertThat(event.getReason()).isEqualTo("GpuMemoryOverGrant");
    assertThat(event.getInvolvedObject().getUid()).isEqualTo(pod.getMetadata().getUid());
    assertThat(event.getMessage())
        .startsWith("container gpu: NVML saw " + (3000 + CONTEXT_MIB) + " MiB on " + GPU0 + " (pid " + escaped.pid() + ")")
        .contains("over its grant of 1024 MiB plus the 512 MiB tolerance")
        .endsWith("; killed pid " + escaped.pid());
    assertThat(scrape()).contains("vgpu_container_memory_over_grant_total{container=\"gpu\",namespace=\"team\",pod=\"escape\"} 1.0");
  }

  @Test
  void withReportTheContainerKeepsRunningAndGetsTheSameEvent() throws Exception {
    startAgent(WatchdogConfig.Action.REPORT);
    String id = containerId();
    Pod pod = allocated("escape", 1024, id);
    Process escaped = processes.hold(pod.getMetadata().getUid(), id, 3000, Map.of());

    Event event = awaitEvent("escape");
    assertThat(event.getReason()).isEqualTo("GpuMemoryOverGrant");
    assertThat(event.getMessage())
        .startsWith("container gpu: NVML saw " + (3000 + CONTEXT_MIB) + " MiB on " + GPU0 + " (pid " + escaped.pid() + ")")
        .endsWith("; reported only (watchdog action: report)");
    Thread.sleep(GRACE.plus(POLL.multipliedBy(3)).toMillis());
    assertThat(escaped.isAlive()).isTrue();
    String metrics = scrape();
    String labels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"escape\",vdevice_index=\"0\",zone=\"vGPU\"";
    assertThat(metrics)
        .contains("vgpu_container_memory_over_grant_total{container=\"gpu\",namespace=\"team\",pod=\"escape\"} 1.0")
        .contains("hami_vgpu_memory_nvml_used_bytes{" + labels + "} " + (double) ((3000 + CONTEXT_MIB) << 20));
    assertThat(events("escape")).as("one Event per episode").hasSize(1);
  }

  @Test
  void containersWithinTheirGrantOrOverBookedByTheirInterposerAndHostProcessesAreNeverTouched() throws Exception {
    startAgent(WatchdogConfig.Action.KILL);
    String withinId = containerId();
    Pod within = allocated("within", 1024, withinId);
    Process withinProcess = processes.hold(within.getMetadata().getUid(), withinId, 512, Map.of());
    String bookedId = containerId();
    Pod booked = allocated("booked", 1024, bookedId);
    writeRegion(hook.resolve("vgpu/containers/" + booked.getMetadata().getUid() + "_gpu/vgpu.cache"), GPU0, 1024L << 20, 3000L << 20);
    Process bookedProcess = processes.hold(booked.getMetadata().getUid(), bookedId, 256, Map.of());
    Process hostProcess = processes.holdOnTheHost(20000, Map.of("CUDA_VISIBLE_DEVICES", "1"));

    String withinLabels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"within\",vdevice_index=\"0\",zone=\"vGPU\"";
    String bookedLabels = "container=\"gpu\",device_uuid=\"" + GPU0 + "\",namespace=\"team\",pod=\"booked\",vdevice_index=\"0\",zone=\"vGPU\"";
    await(() -> scrape().contains("hami_vgpu_memory_nvml_used_bytes{" + withinLabels + "} " + (double) ((512 + CONTEXT_MIB) << 20)));
    Thread.sleep(GRACE.plus(POLL.multipliedBy(5)).toMillis());

    assertThat(withinProcess.isAlive()).isTrue();
    assertThat(bookedProcess.isAlive()).isTrue();
    assertThat(hostProcess.isAlive()).isTrue();
    assertThat(client.v1().events().inNamespace("team").list().getItems()).isEmpty();
    String metrics = scrape();
    assertThat(metrics)
        .doesNotContain("vgpu_container_memory_over_grant_total{")
        .contains("hami_vgpu_memory_used_bytes{" + bookedLabels + "} " + (double) (3000L << 20))
        .contains("hami_vgpu_memory_nvml_used_bytes{" + bookedLabels + "} " + (double) ((256 + CONTEXT_MIB) << 20))
        .contains("vgpu_unmapped_gpu_processes_total{device_uuid=\"" + GPU1 + "\",reason=\"not-a-pod\"} 1.0");
  }

  /**
   * A pod that asks for no GPU and was never granted one, bound and running as {@code containerId}: under
   * NVIDIA's runtime as the node default, {@code NVIDIA_VISIBLE_DEVICES=all} gives it every card.
   */
  private Pod ungranted(String namespace, String name, String containerId) {
    return client.pods().inNamespace(namespace).resource(new PodBuilder()
        .withNewMetadata().withName(name).withNamespace(namespace).endMetadata()
        .withNewSpec().withNodeName("n1").addNewContainer().withName("cuda").withImage("vgpu-lab/probe")
        .addNewEnv().withName("NVIDIA_VISIBLE_DEVICES").withValue("all").endEnv().endContainer().endSpec()
        .withNewStatus().withPhase("Running")
        .addNewContainerStatus().withName("cuda").withContainerID("containerd://" + containerId).withReady(true).endContainerStatus()
        .endStatus().build()).create();
  }

  @Test
  void aContainerWithoutAGrantThatTakesEveryCardIsKilledAndItsSeriesGoWithItsPod() throws Exception {
    startAgent(WatchdogConfig.Action.REPORT); // over-grant only reported: the ungranted action is its own, kill by default
    String id = containerId();
    Pod pod = ungranted("team", "sneaky", id);
    Process sneaky = processes.hold(pod.getMetadata().getUid(), id, 3000, Map.of("NVIDIA_VISIBLE_DEVICES", "all", "CUDA_VISIBLE_DEVICES", "1"));

    assertThat(sneaky.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("killed by the watchdog").isTrue();
    assertThat(sneaky.exitValue()).as("SIGKILL").isEqualTo(128 + 9);
    Event event = awaitEvent("sneaky");
    assertThat(event.getReason()).isEqualTo("GpuUseWithoutGrant");
    assertThat(event.getMessage())
        .startsWith("container cuda: NVML saw " + (3000 + CONTEXT_MIB) + " MiB on " + GPU1 + " (pid " + sneaky.pid() + ")")
        .contains("without a grant (the pod holds no GPU grant), over the 512 MiB tolerance")
        .endsWith("; killed pid " + sneaky.pid());
    String series = "vgpu_container_gpu_use_without_grant_total{container=\"cuda\",namespace=\"team\",pod=\"sneaky\"} 1.0";
    assertThat(scrape()).contains(series);

    client.pods().inNamespace("team").withName("sneaky").delete();
    await(() -> !scrape().contains("pod=\"sneaky\""));
  }

  @Test
  void ungrantedUseInAnExemptNamespaceIsLeftAloneAndWithReportOnlyReported() throws Exception {
    startAgent(new WatchdogConfig(WatchdogConfig.Action.KILL, POLL, GRACE, 512, WatchdogConfig.Action.REPORT, List.of("monitoring")));
    String exporterId = containerId();
    Pod exporter = ungranted("monitoring", "exporter", exporterId);
    String reportedId = containerId();
    Pod reported = ungranted("team", "reported", reportedId);
    Process exporterProcess = processes.hold(exporter.getMetadata().getUid(), exporterId, 3000, Map.of("NVIDIA_VISIBLE_DEVICES", "all"));
    Process reportedProcess = processes.hold(reported.getMetadata().getUid(), reportedId, 3000, Map.of("NVIDIA_VISIBLE_DEVICES", "all"));

    Event event = awaitEvent("reported");
    assertThat(event.getReason()).isEqualTo("GpuUseWithoutGrant");
    assertThat(event.getMessage()).endsWith("; reported only (watchdog ungranted.action: report)");
    Thread.sleep(GRACE.plus(POLL.multipliedBy(3)).toMillis());
    assertThat(exporterProcess.isAlive()).isTrue();
    assertThat(reportedProcess.isAlive()).isTrue();
    assertThat(client.v1().events().inNamespace("monitoring").list().getItems()).isEmpty();
    assertThat(scrape()).contains("vgpu_unmapped_gpu_processes_total{device_uuid=\"" + GPU0 + "\",reason=\"exempt\"} 1.0");
  }

  /** A shared region (layout version 1, vgpu-native README) in which the interposer books {@code used} of {@code limit}. */
  private static void writeRegion(Path file, String uuid, long limit, long used) throws IOException {
    // the whole file: the node monitor reads only a regular file of the layout's size
    ByteBuffer b = ByteBuffer.allocate(598016).order(ByteOrder.LITTLE_ENDIAN);
    b.putLong(0, 0x3147455255504756L).putInt(8, 1).putInt(16, 1).putInt(20, 160).putLong(32, 4096);
    b.put(4096, uuid.getBytes(StandardCharsets.US_ASCII));
    b.putLong(4096 + 96, limit).putLong(4096 + 112, used).putLong(4096 + 120, used);
    Files.write(file, b.array());
  }

  private List<Event> events(String pod) {
    return client.v1().events().inAnyNamespace().list().getItems().stream()
        .filter(e -> e.getInvolvedObject() != null && pod.equals(e.getInvolvedObject().getName())).toList();
  }

  private Event awaitEvent(String pod) throws InterruptedException {
    await(() -> !events(pod).isEmpty());
    return events(pod).get(0);
  }

  private String scrape() {
    try {
      return HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.monitorPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not reached within " + WAIT);
      }
      Thread.sleep(50);
    }
  }
}
