package io.vgpu.k8s.kai;

import static io.vgpu.k8s.kai.KaiFixtures.GPU0;
import static io.vgpu.k8s.kai.KaiFixtures.GPU1;
import static io.vgpu.k8s.kai.KaiFixtures.NODE;
import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.spi.ContractSettings;
import io.vgpu.k8s.scheduler.EventRecorder;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.NvidiaContainerContract;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node agent's KAI grant writer against a CRUD mock API server: files on disk, Events through the API. */
@EnableKubernetesMockClient(crud = true)
class KaiGrantWriterTest {
  static final String G0 = "0a1b2c3d-0000-4000-8000-000000000000";
  static final String G1 = "9f8e7d6c-0000-4000-8000-000000000001";

  KubernetesClient client;
  @TempDir Path hook;
  EventRecorder recorder;
  HookLayout layout;

  @BeforeEach
  void cluster() {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE).addToLabels(KaiKeys.NODE_GPU_MEMORY_LABEL, "40960").endMetadata().build()).create();
    recorder = new EventRecorder(client, "vgpu-device-plugin", Clock.systemUTC());
    layout = new HookLayout(hook.toString());
  }

  @AfterEach
  void stop() {
    recorder.close();
  }

  private KaiGrantWriter writer() {
    return writer(Map.of(GPU0, 40960L, GPU1, 40960L));
  }

  private KaiGrantWriter writer(Map<String, Long> cards) {
    NvidiaContainerContract contract = new NvidiaContainerContract(ContractSettings.DEFAULT.withHookPath(hook.toString()).withLibCudaLogLevel(""));
    return new KaiGrantWriter(client, NODE, layout, contract, () -> client.pods().inAnyNamespace().list().getItems(), () -> cards, recorder::warning);
  }

  private Pod create(Pod pod) {
    return client.pods().resource(pod).create();
  }

  private void running(Pod pod) {
    client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName())
        .editStatus(p -> new PodBuilder(p).editStatus().withPhase("Running").endStatus().build());
  }

  private void bindRequest(Pod pod, String portion, int count, List<String> groups) {
    client.genericKubernetesResources(KaiGrantWriter.BIND_REQUESTS).resource(KaiFixtures.bindRequest(pod, portion, count, groups)).create();
  }

  /** The Warning Events on {@code pod}, as {@code reason: message}, once {@code count} have arrived. */
  private List<String> events(Pod pod, int count) throws InterruptedException {
    Instant deadline = Instant.now().plus(Duration.ofSeconds(10));
    List<String> out;
    do {
      out = client.v1().events().inNamespace(pod.getMetadata().getNamespace()).list().getItems().stream()
          .filter(e -> pod.getMetadata().getName().equals(e.getInvolvedObject().getName()) && "Warning".equals(e.getType()))
          .map(e -> e.getReason() + ": " + e.getMessage())
          .toList();
      if (out.size() >= count) {
        return out;
      }
      Thread.sleep(50);
    } while (Instant.now().isBefore(deadline));
    return out;
  }

  private static String mode(Path path) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
  }

  @Test
  void aFractionPodGetsItsRegionDirectoryThenItsGrantFileAndEveryRefusalIsOneEvent() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("shared", "uid-1"));
    String uid = pod.getMetadata().getUid();
    KaiGrantWriter writer = writer();
    Path limits = Path.of(layout.kaiLimitsFile(uid, "main"));
    Path region = Path.of(layout.containerDirectory(uid, "main"));

    writer.reconcile();
    assertThat((Integer) Files.getAttribute(region, "unix:mode") & 07777).as("the region directory, sticky, before any grant").isEqualTo(01777);
    assertThat(limits).doesNotExist();

    running(pod);
    writer.reconcile();
    writer.reconcile();
    Thread.sleep(200);
    assertThat(events(pod, 1))
        .containsExactly(
            "KaiGrantUnavailable: container main: no BindRequest team/shared (scheduling.run.ai/v1alpha2) exists; no limits file is written, so libvgpu.so refuses CUDA in the container");
    assertThat(limits).doesNotExist();

    bindRequest(pod, "0.51", 1, List.of(G0));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU1)).create();
    client.configMaps().resource(new ConfigMapBuilder().withNewMetadata().withNamespace("team").withName("shared-abcdefg-shared-gpu-1").endMetadata()
        .addToData(KaiKeys.CUDA_DEVICE_MEMORY_LIMIT, "20889m").build()).create();
    writer.reconcile();
    assertThat(Files.readString(limits))
        .isEqualTo(
            "# vgpu limits of pod team/shared container main\n"
                + "# devices: " + GPU1 + "\n"
                + "VGPU_DEVICES=" + GPU1 + "\n"
                + "CUDA_DEVICE_MEMORY_LIMIT_0=20889m\n"
                + "CUDA_DEVICE_SM_LIMIT=0\n"
                + "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + hook + "/vgpu/vgpu.cache\n"
                + "END\n");
    assertThat(mode(limits)).isEqualTo("r--r--r--");
    assertThat(mode(limits.getParent())).isEqualTo("rwxr-xr-x");
    assertThat(writer.granted()).extracting(g -> g.container() + " " + g.devices())
        .containsExactly("main [DeviceGrant[uuid=" + GPU1 + ", vendor=NVIDIA, memoryMiB=20889, cores=0]]");
    Thread.sleep(200);
    assertThat(events(pod, 1)).as("a ConfigMap that agrees is no Event").hasSize(1);
  }

  /** A fraction pod that ended holds nothing: the node monitor stops reporting it at the next pass. */
  @Test
  void aPodThatEndedIsNoLongerGranted() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("shared", "uid-1"));
    bindRequest(pod, "0.51", 1, List.of(G0));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU1)).create();
    KaiGrantWriter writer = writer();
    writer.reconcile();
    assertThat(writer.granted()).extracting(KaiGrantWriter.Granted::container).containsExactly("main");
    client.pods().inNamespace("team").withName("shared").editStatus(p -> new PodBuilder(p).editStatus().withPhase("Failed").endStatus().build());
    writer.reconcile();
    assertThat(writer.granted()).isEmpty();
  }

  @Test
  void aTwoCardFractionGetsBothCardsAndAConfigMapThatDisagreesIsReported() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("pair", "uid-2"));
    bindRequest(pod, "0.51", 2, List.of(G0, G1));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU0)).create();
    client.pods().resource(KaiFixtures.reservationPod(G1, NODE, GPU1)).create();
    client.configMaps().resource(new ConfigMapBuilder().withNewMetadata().withNamespace("team").withName("pair-abcdefg-shared-gpu-1").endMetadata()
        .addToData(KaiKeys.CUDA_DEVICE_MEMORY_LIMIT, "40960m").build()).create();
    writer().reconcile();
    assertThat(Files.readString(Path.of(layout.kaiLimitsFile(pod.getMetadata().getUid(), "main"))))
        .contains("# devices: " + GPU0 + "," + GPU1 + "\nVGPU_DEVICES=" + GPU0 + "," + GPU1 + "\nCUDA_DEVICE_MEMORY_LIMIT_0=20889m\nCUDA_DEVICE_MEMORY_LIMIT_1=20889m\n");
    assertThat(events(pod, 1))
        .containsExactly(
            "KaiLimitMismatch: container main: ConfigMap team/pair-abcdefg-shared-gpu-1 has CUDA_DEVICE_MEMORY_LIMIT='40960m', vgpu granted 20889 MiB per card (2 cards); vgpu's grant stands");
  }

  @Test
  void aBindRequestThatIsNotThePodsIsReportedAtOnceAndNothingIsWritten() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("forged", "uid-3"));
    client.genericKubernetesResources(KaiGrantWriter.BIND_REQUESTS)
        .resource(new io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder(KaiFixtures.bindRequest(pod, "0.90", 1, List.of(G0)))
            .editMetadata().editFirstOwnerReference().withUid("someone-else").endOwnerReference().endMetadata().build())
        .create();
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU0)).create();
    writer().reconcile();
    assertThat(Path.of(layout.kaiLimitsFile(pod.getMetadata().getUid(), "main"))).doesNotExist();
    assertThat(events(pod, 1))
        .containsExactly(
            "KaiGrantUnavailable: container main: BindRequest team/forged is not owned by pod UID " + pod.getMetadata().getUid()
                + " (KAI's scheduler creates it owned by the pod); no limits file is written, so libvgpu.so refuses CUDA in the container");
  }

  @Test
  void aMissingLabelIsReportedAndAPodVgpusWebhookNeverSawToo() throws Exception {
    client.nodes().withName(NODE).edit(n -> new NodeBuilder(n).editMetadata().removeFromLabels(KaiKeys.NODE_GPU_MEMORY_LABEL).endMetadata().build());
    Pod pod = create(KaiFixtures.sharedPod("nolabel", "uid-4"));
    bindRequest(pod, "0.51", 1, List.of(G0));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU0)).create();
    Pod unmutated = create(new PodBuilder(KaiFixtures.sharedPod("bare", "uid-5")).editSpec().editContainer(1).withVolumeMounts(List.of()).endContainer().endSpec().build());
    writer().reconcile();
    assertThat(events(pod, 1))
        .containsExactly("KaiGrantUnavailable: container main: node n1 has no label nvidia.com/gpu.memory; no limits file is written, so libvgpu.so refuses CUDA in the container");
    assertThat(events(unmutated, 1))
        .containsExactly(
            "KaiGrantUnavailable: no fraction container: no container mounts volume vgpu-kai-grant: vgpu's webhook did not mutate the pod at creation; no limits file is written, so libvgpu.so refuses CUDA in the container");
  }

  @Test
  void aRestartedAgentRewritesIdempotentlyAndKeepsAGrantItCannotDeriveAgain() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("kept", "uid-6"));
    bindRequest(pod, "0.51", 1, List.of(G0));
    Pod reservation = client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU0)).create();
    writer().reconcile();
    Path limits = Path.of(layout.kaiLimitsFile(pod.getMetadata().getUid(), "main"));
    String first = Files.readString(limits);
    Object inode = Files.getAttribute(limits, "unix:ino");

    writer().reconcile(); // a restart: derived again, same content, file untouched
    assertThat(Files.getAttribute(limits, "unix:ino")).isEqualTo(inode);

    client.genericKubernetesResources(KaiGrantWriter.BIND_REQUESTS).inNamespace("team").withName("kept").delete();
    client.pods().resource(reservation).delete();
    running(pod);
    KaiGrantWriter restarted = writer();
    restarted.reconcile(); // another restart, KAI's objects gone: the grant stands, no Event
    assertThat(Files.readString(limits)).isEqualTo(first);
    assertThat(restarted.granted()).as("read back for the monitor").extracting(g -> g.devices().get(0).memoryMiB()).containsExactly(20889);
    Thread.sleep(300);
    assertThat(events(pod, 0)).isEmpty();
  }

  @Test
  void aPendingPodIsNotReportedForWhatMayOnlyBeNotYet() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("early", "uid-7"));
    bindRequest(pod, "0.51", 1, List.of(G0));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, null)).create();
    KaiGrantWriter writer = writer();
    writer.reconcile();
    Thread.sleep(300);
    assertThat(events(pod, 0)).isEmpty();
    client.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName("gpu-reservation-0a1b2c3d")
        .edit(p -> new PodBuilder(p).editMetadata().addToAnnotations(KaiKeys.RESERVE_FOR_GPU_INDEX, GPU0).endMetadata().build());
    writer.reconcile();
    assertThat(Files.readString(Path.of(layout.kaiLimitsFile(pod.getMetadata().getUid(), "main")))).contains("VGPU_DEVICES=" + GPU0 + "\n");
  }

  @Test
  void aLabelAboveWhatNvmlReportsIsReportedAndTheGrantIsAPortionOfNvmlsFigure() throws Exception {
    Pod pod = create(KaiFixtures.sharedPod("small", "uid-8"));
    bindRequest(pod, "0.51", 1, List.of(G0));
    client.pods().resource(KaiFixtures.reservationPod(G0, NODE, GPU0)).create();
    writer(Map.of(GPU0, 20000L)).reconcile();
    assertThat(Files.readString(Path.of(layout.kaiLimitsFile(pod.getMetadata().getUid(), "main")))).contains("CUDA_DEVICE_MEMORY_LIMIT_0=10200m\n");
    assertThat(events(pod, 1))
        .containsExactly(
            "KaiGpuMemoryLabelMismatch: container main: node label nvidia.com/gpu.memory=40960 disagrees with the 20000 MiB NVML reports for " + GPU0
                + ": the grant there is a portion of the smaller, 20000 MiB");
  }
}
