package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.grpc.StatusRuntimeException;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.SharingConfig;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.vgpu.k8s.grant.GrantKey;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.grant.GrantVerifier;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.scheduler.NodeLock;
import io.vgpu.k8s.testing.NodeLocks;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The device plugin against an in-process kubelet over real unix sockets and a CRUD mock API server. */
@EnableKubernetesMockClient(crud = true)
class DevicePluginTest {
  static final String PREFIX = MockDeviceSource.DEFAULT_UUID_PREFIX;
  static final String GPU0 = PREFIX + "00";
  static final String GPU1 = PREFIX + "01";

  KubernetesClient client;
  @TempDir Path dir;
  FakeKubelet kubelet;
  KubeletPlugin plugin;
  AdvertisedDevices advertised;
  NodeRegistrar registrar;
  /** The scheduler's key: the tests sign grants with it as the scheduler does. */
  final GrantKey key = GrantKey.random();
  /** The Warning Events the allocator recorded, as {@code pod reason: message}. */
  final List<String> events = new CopyOnWriteArrayList<>();
  /** The containers the contract was asked to allocate, as {@code pod/container}. */
  static final List<String> CONTRACT_CALLS = new CopyOnWriteArrayList<>();

  /** A contract that reports what it was given, so the tests see exactly which grant reached it. */
  static final ContainerContract ECHO =
      (pod, uid, grant, env) -> {
        CONTRACT_CALLS.add(pod + "/" + grant.name());
        Map<String, String> out = new LinkedHashMap<>();
        out.put("POD", pod.toString());
        out.put("CONTAINER", grant.name());
        out.put("NVIDIA_VISIBLE_DEVICES", String.join(",", grant.devices().stream().map(DeviceGrant::uuid).toList()));
        for (int i = 0; i < grant.devices().size(); i++) {
          out.put("CUDA_DEVICE_MEMORY_LIMIT_" + i, grant.devices().get(i).memoryMiB() + "m");
        }
        return new ContainerContract.Allocation(out, List.of(new ContainerContract.Mount("/usr/local/vgpu", "/host/" + uid, false)), List.of());
      };

  @BeforeEach
  void start() throws Exception {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    kubelet = new FakeKubelet(dir);
    advertised = new AdvertisedDevices(false);
    MockDeviceSource source = new MockDeviceSource(GpuProfiles.get("A100-SXM4-40GB"), 2, PREFIX, 0);
    registrar = new NodeRegistrar(client, "n1", source, new DeviceRegistrar("NVIDIA"), SharingConfig.DEFAULT, advertised);
    registrar.register();
    CONTRACT_CALLS.clear();
    serve(PodGrants.verified(new GrantVerifier(() -> Optional.of(key), Clock.systemUTC(), Duration.ofSeconds(10))));
  }

  /** (Re)starts the plugin with an allocator that trusts {@code grants}. */
  private void serve(PodGrants grants) {
    if (plugin != null) {
      plugin.close();
    }
    PodAllocator allocator = new PodAllocator(client, "n1", "nvidia.com/gpu", PodAllocator.contractOnly(ECHO),
        new NodeLock(client, Duration.ofMinutes(5), Clock.systemUTC()), grants, (pod, reason, message) -> events.add(pod.getMetadata().getName() + " " + reason + ": " + message), false);
    plugin = new KubeletPlugin(dir, "nvidia-gpu.sock", "nvidia.com/gpu", new DevicePluginService(advertised, allocator));
    assertThat(plugin.ensureRegistered()).isTrue();
  }

  @AfterEach
  void stop() {
    plugin.close();
    kubelet.close();
  }

  /** A pod as the scheduler and bind leave it: decision annotations, bound, allocating, lock taken. */
  private Pod boundPod(String name, List<String> initNames, List<String> appNames, List<List<DeviceGrant>> perContainer, String bindTime, boolean lock) {
    List<ContainerGrant> init = new ArrayList<>();
    List<ContainerGrant> app = new ArrayList<>();
    for (int i = 0; i < initNames.size(); i++) {
      init.add(new ContainerGrant(initNames.get(i), perContainer.get(i)));
    }
    for (int i = 0; i < appNames.size(); i++) {
      app.add(new ContainerGrant(appNames.get(i), perContainer.get(initNames.size() + i)));
    }
    String devices = DeviceListCodec.encode(new PodGrant(new PodRef("default", name), "n1", init, app));
    PodBuilder b = new PodBuilder()
        .withNewMetadata().withName(name).withNamespace("default").withUid("uid-" + name)
        .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1")
        .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, devices)
        .addToAnnotations(HamiAnnotations.DEVICES_TO_ALLOCATE, devices)
        .addToAnnotations(HamiAnnotations.BIND_PHASE, "allocating")
        .addToAnnotations(HamiAnnotations.BIND_TIME, bindTime)
        .endMetadata()
        .withNewSpec().withNodeName("n1").endSpec()
        .withNewStatus().withPhase("Pending").endStatus();
    for (int i = 0; i < initNames.size(); i++) {
      b.editSpec().addToInitContainers(gpuContainer(initNames.get(i), perContainer.get(i).size())).endSpec();
    }
    for (int i = 0; i < appNames.size(); i++) {
      b.editSpec().addToContainers(gpuContainer(appNames.get(i), perContainer.get(initNames.size() + i).size())).endSpec();
    }
    Pod pod = client.pods().inNamespace("default").resource(b.build()).create();
    pod = sign(pod);
    if (lock) {
      NodeLocks.lockFor(client, "n1", "default", name);
    }
    return pod;
  }

  /** A container asking for {@code gpus} of the count resource (none when 0). */
  private static io.fabric8.kubernetes.api.model.Container gpuContainer(String name, int gpus) {
    var c = new io.fabric8.kubernetes.api.model.ContainerBuilder().withName(name);
    if (gpus > 0) {
      c.withNewResources().addToLimits("nvidia.com/gpu", new io.fabric8.kubernetes.api.model.Quantity(Integer.toString(gpus))).endResources();
    }
    return c.build();
  }

  /** What the scheduler writes beside the grant: its signature over the pod's UID, node and cards. */
  private Pod sign(Pod pod) {
    Map<String, String> a = pod.getMetadata().getAnnotations();
    String signature = new GrantSignature(key).sign(pod.getMetadata().getUid(), a.get(HamiAnnotations.ASSIGNED_NODE), a.get(HamiAnnotations.DEVICES_ALLOCATED));
    return annotate(pod.getMetadata().getName(), GrantSignature.ANNOTATION, signature);
  }

  /** A write to the pod's annotations, as its owner (or the scheduler) makes it. */
  private Pod annotate(String pod, String key, String value) {
    return client.pods().inNamespace("default").withName(pod).edit(p -> new PodBuilder(p).editMetadata().addToAnnotations(key, value).endMetadata().build());
  }

  /** What kubelet does with a pod whose admission failed: it never starts. */
  private void rejectedByKubelet(String pod) {
    client.pods().inNamespace("default").withName(pod).edit(p -> new PodBuilder(p).editStatus().withPhase("Failed").withReason("UnexpectedAdmissionError").endStatus().build());
  }

  /** A pod that names node n1 itself and asks for a card: it never met vgpu's scheduler. */
  private Pod bypassPod(String name, Map<String, String> annotations) {
    return client.pods().inNamespace("default").resource(new PodBuilder()
        .withNewMetadata().withName(name).withNamespace("default").withUid("uid-" + name).addToAnnotations(annotations).endMetadata()
        .withNewSpec().withNodeName("n1").withSchedulerName("my-scheduler").addToContainers(gpuContainer("gpu", 1)).endSpec()
        .withNewStatus().withPhase("Pending").endStatus().build()).create();
  }

  private String lock() {
    Map<String, String> a = client.nodes().withName("n1").get().getMetadata().getAnnotations();
    return a == null ? null : a.get(HamiAnnotations.NODE_LOCK);
  }

  private static DeviceGrant grant(String uuid, int mem, int cores) {
    return new DeviceGrant(uuid, "NVIDIA", mem, cores);
  }

  private Map<String, String> annotations(String pod) {
    return client.pods().inNamespace("default").withName(pod).get().getMetadata().getAnnotations();
  }

  @Test
  void registersWithKubeletUnderHamisName() throws Exception {
    var request = kubelet.awaitRegistration();
    assertThat(request.getVersion()).isEqualTo("v1beta1");
    assertThat(request.getEndpoint()).isEqualTo("nvidia-gpu.sock");
    assertThat(request.getResourceName()).isEqualTo("nvidia.com/gpu");
    assertThat(request.getOptions().getGetPreferredAllocationAvailable()).isTrue();
  }

  @Test
  void advertisesEverySharingSlotAsAReplicaAndStreamsHealthChanges() throws Exception {
    kubelet.watch();
    ListAndWatchResponse first = kubelet.nextList(Duration.ofSeconds(10));
    assertThat(first.getDevicesCount()).isEqualTo(20);
    assertThat(first.getDevices(0).getID()).isEqualTo(GPU0 + "-0");
    assertThat(first.getDevices(19).getID()).isEqualTo(GPU1 + "-9");
    assertThat(first.getDevicesList()).allSatisfy(d -> assertThat(d.getHealth()).isEqualTo("Healthy"));

    var sick = new ArrayList<>(advertised.devices());
    sick.set(1, sick.get(1).withHealthy(false));
    advertised.update(sick);
    ListAndWatchResponse second = kubelet.nextList(Duration.ofSeconds(10));
    assertThat(second.getDevicesList().stream().filter(d -> d.getHealth().equals("Unhealthy")).count()).isEqualTo(10);
  }

  @Test
  void registersTheNodeAnnotationAndLabelsOnlyWhenTheyChange() {
    var node = client.nodes().withName("n1").get();
    assertThat(node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER))
        .isEqualTo("[{\"id\":\"" + GPU0 + "\",\"count\":10,\"devmem\":40960,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-40GB\",\"mode\":\"hami-core\",\"health\":true},"
            + "{\"id\":\"" + GPU1 + "\",\"index\":1,\"count\":10,\"devmem\":40960,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-40GB\",\"mode\":\"hami-core\",\"health\":true}]");
    assertThat(node.getMetadata().getLabels())
        .containsEntry(NodeRegistrar.PRODUCT_LABEL, "NVIDIA-A100-SXM4-40GB")
        .containsEntry(NodeRegistrar.MEMORY_LABEL, "40960")
        .containsEntry(NodeRegistrar.COUNT_LABEL, "2");
    assertThat(registrar.register()).isFalse();
  }

  @Test
  void labelValuesAreValid() {
    assertThat(NodeRegistrar.labelValue("Tesla V100-SXM2-32GB")).isEqualTo("Tesla-V100-SXM2-32GB");
    assertThat(NodeRegistrar.labelValue("NVIDIA H100 80GB HBM3")).isEqualTo("NVIDIA-H100-80GB-HBM3");
    assertThat(NodeRegistrar.labelValue(" (odd) name ")).isEqualTo("odd-name");
  }

  @Test
  void allocateHandsTheContainerItsScheduledCardsAndCompletesTheHandshake() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 4096, 25))), "100", true);
    // kubelet picked another replica of the granted card: served by card
    AllocateResponse response = kubelet.allocate(List.of(GPU1 + "-3"));
    assertThat(response.getContainerResponses(0).getEnvsMap())
        .containsEntry("NVIDIA_VISIBLE_DEVICES", GPU1)
        .containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "4096m")
        .containsEntry("CONTAINER", "gpu");
    String uid = client.pods().inNamespace("default").withName("p1").get().getMetadata().getUid();
    assertThat(response.getContainerResponses(0).getMounts(0).getHostPath()).isEqualTo("/host/" + uid);
    assertThat(annotations("p1"))
        .containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, ";")
        .containsEntry(HamiAnnotations.BIND_PHASE, "success");
    assertThat(lock()).isNull();
    assertThat(events).isEmpty();
  }

  @Test
  void multiContainerAndInitContainerPodsAreServedInContainerOrder() {
    boundPod("p1", List.of("init"), List.of("sidecar", "a", "b"),
        List.of(List.of(grant(GPU0, 1000, 10)), List.of(), List.of(grant(GPU0, 2000, 20), grant(GPU1, 2000, 20)), List.of(grant(GPU1, 3000, 30))), "100", true);
    assertThat(kubelet.allocate(List.of(GPU0 + "-1")).getContainerResponses(0).getEnvsMap()).containsEntry("CONTAINER", "init").containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "1000m");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating");
    var a = kubelet.allocate(List.of(GPU1 + "-2", GPU0 + "-2")).getContainerResponses(0).getEnvsMap();
    assertThat(a).as("the granted order, whatever kubelet's").containsEntry("CONTAINER", "a").containsEntry("NVIDIA_VISIBLE_DEVICES", GPU0 + "," + GPU1);
    var b = kubelet.allocate(List.of(GPU1 + "-3")).getContainerResponses(0).getEnvsMap();
    assertThat(b).containsEntry("CONTAINER", "b").containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "3000m");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, ";;;;").containsEntry(HamiAnnotations.BIND_PHASE, "success");
  }

  @Test
  void aRequestForOtherCardsIsRefusedAndTheHolderKeepsItsGrant() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 1000, 10))), "100", true);
    String before = annotations("p1").get(HamiAnnotations.DEVICES_TO_ALLOCATE);
    String lock = lock();
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0", GPU1 + "-0")))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageContaining("device number not matched: pod default/p1 container 0 was granted 1 devices, kubelet asks for 2");
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-0")))
        .hasMessageContaining("kubelet asks for cards [" + GPU1 + "] but container 0 of pod default/p1, which holds the node's lock, was granted [" + GPU0 + "]");
    assertThat(CONTRACT_CALLS).isEmpty();
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating").containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, before);
    assertThat(lock()).isEqualTo(lock);
    assertThat(events).hasSize(2).allSatisfy(e -> assertThat(e).startsWith("p1 AllocateRefused: an Allocate for "));
    // the pod's own Allocate still succeeds
    assertThat(kubelet.allocate(List.of(GPU0 + "-7")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/p1");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "success");
  }

  @Test
  void twoPendingPodsAreToldApart() {
    // p-old was fully allocated already; p-new holds the lock and is the one kubelet is starting.
    boundPod("p-old", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 1000, 10))), "100", false);
    client.pods().inNamespace("default").withName("p-old").edit(p -> new PodBuilder(p).editMetadata()
        .addToAnnotations(HamiAnnotations.DEVICES_TO_ALLOCATE, ";").addToAnnotations(HamiAnnotations.BIND_PHASE, "success").endMetadata().build());
    boundPod("p-new", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 2000, 10))), "200", true);
    assertThat(kubelet.allocate(List.of(GPU1 + "-0")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/p-new");

    // Without a lock, the oldest bound pod that still has containers to allocate comes first.
    boundPod("q-late", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 10, 1))), "400", false);
    boundPod("q-early", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 20, 1))), "300", false);
    assertThat(kubelet.allocate(List.of(GPU0 + "-0")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/q-early");
    assertThat(kubelet.allocate(List.of(GPU1 + "-1")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/q-late");
  }

  // --- grants a tenant edited: each refused, the honest pod served (issue 19, item 1) ---

  @Test
  void aGrantWidenedAfterSigningIsRefused() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    String wholeCard = GPU1 + ",NVIDIA,40960,100:;";
    annotate("p1", HamiAnnotations.DEVICES_ALLOCATED, wholeCard);
    annotate("p1", HamiAnnotations.DEVICES_TO_ALLOCATE, wholeCard);

    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-0")))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageContaining("pod default/p1 holds node n1's lock but its grant is refused: its vgpu.io/grant-signature does not match the pod's UID, node and grant");
    assertThat(CONTRACT_CALLS).isEmpty();
    assertThat(events).singleElement().asString()
        .isEqualTo("p1 GrantRefused: Allocate refused: its grant is not the scheduler's (its vgpu.io/grant-signature does not match the pod's UID, node and grant)");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "failed");
    assertThat(lock()).as("its own lock, released").isNull();
  }

  @Test
  void aGrantMovedToAnotherTenantsCardIsRefused() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    String moved = GPU0 + ",NVIDIA,1024,10:;";
    annotate("p1", HamiAnnotations.DEVICES_ALLOCATED, moved);
    annotate("p1", HamiAnnotations.DEVICES_TO_ALLOCATE, moved);
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0"))).hasMessageContaining("its grant is refused: its vgpu.io/grant-signature does not match");
    assertThat(CONTRACT_CALLS).isEmpty();
  }

  @Test
  void onlyTheSignedGrantIsServedWhateverToAllocateSays() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    annotate("p1", HamiAnnotations.DEVICES_TO_ALLOCATE, GPU1 + ",NVIDIA,40960,100:;");
    assertThat(kubelet.allocate(List.of(GPU1 + "-0")).getContainerResponses(0).getEnvsMap())
        .containsEntry("NVIDIA_VISIBLE_DEVICES", GPU1).containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "1024m");
  }

  @Test
  void toAllocateMarkingAContainerTheSchedulerGaveNothingChangesNothing() {
    boundPod("p1", List.of(), List.of("sidecar", "gpu"), List.of(List.of(), List.of(grant(GPU1, 1024, 10))), "100", true);
    annotate("p1", HamiAnnotations.DEVICES_TO_ALLOCATE, GPU0 + ",NVIDIA,40960,100:;" + GPU1 + ",NVIDIA,1024,10:;");
    assertThat(kubelet.allocate(List.of(GPU1 + "-0")).getContainerResponses(0).getEnvsMap()).containsEntry("CONTAINER", "gpu");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, ";;").containsEntry(HamiAnnotations.BIND_PHASE, "success");
    assertThatThrownBy(() -> kubelet.pluginStub().allocate(io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest.getDefaultInstance()))
        .hasMessageContaining("Allocate on node n1 asks for no container");
  }

  @Test
  void anUnsignedGrantIsRefused() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    client.pods().inNamespace("default").withName("p1").edit(p -> new PodBuilder(p).editMetadata().removeFromAnnotations(GrantSignature.ANNOTATION).endMetadata().build());
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-0"))).hasMessageContaining("its grant is refused: the pod carries no vgpu.io/grant-signature");
    assertThat(events).singleElement().asString().startsWith("p1 GrantRefused: ");
    assertThat(CONTRACT_CALLS).isEmpty();
  }

  @Test
  void withoutAKeyNothingIsServed() {
    serve(PodGrants.verified(new GrantVerifier(Optional::empty, Clock.systemUTC(), Duration.ofSeconds(10))));
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-0"))).hasMessageContaining("its grant is refused: the grant key cannot be read");
    assertThat(CONTRACT_CALLS).isEmpty();
  }

  @Test
  void aGrantCopiedFromAnotherPodIsRefusedAndTheHonestPodIsServed() {
    Pod honest = boundPod("honest", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    Map<String, String> copied = new LinkedHashMap<>(honest.getMetadata().getAnnotations());
    bypassPod("copy", copied);
    String lock = lock();

    // kubelet admits the copy with the honest pod's cards: whose Allocate it is cannot be told, so none is served
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-5")))
        .hasMessageContaining("whose Allocate this is cannot be told; pods that vgpu's scheduler did not place wait for admission on node n1 too: default/copy (its vgpu.io/grant-signature does not match");
    assertThat(events).singleElement().asString()
        .isEqualTo("copy GrantRefused: Allocate refused: its grant is not the scheduler's (its vgpu.io/grant-signature does not match the pod's UID, node and grant)");
    assertThat(annotations("honest")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating").containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, copied.get(HamiAnnotations.DEVICES_TO_ALLOCATE));
    assertThat(lock()).isEqualTo(lock);

    rejectedByKubelet("copy");
    assertThat(kubelet.allocate(List.of(GPU1 + "-0")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/honest");
    assertThat(CONTRACT_CALLS).containsExactly("default/honest/gpu");
    assertThat(annotations("copy")).doesNotContainEntry(HamiAnnotations.BIND_PHASE, "success");
  }

  // --- pods that bypassed the scheduler (issue 19, item 3) ---

  @Test
  void aBypassPodAskingForOtherCardsIsRefusedAndTheHolderKeepsItsGrant() {
    boundPod("victim", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    String toAllocate = annotations("victim").get(HamiAnnotations.DEVICES_TO_ALLOCATE);
    String lock = lock();
    bypassPod("intruder", Map.of());

    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0")))
        .hasMessageContaining("kubelet asks for cards [" + GPU0 + "] but container 0 of pod default/victim, which holds the node's lock, was granted [" + GPU1 + "]")
        .hasMessageContaining("default/intruder");
    assertThat(events).singleElement().asString()
        .isEqualTo("intruder SchedulerBypassed: Allocate refused: the pod asks for nvidia.com/gpu but bypassed vgpu's scheduler, which never granted it a card");
    assertThat(annotations("victim")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating").containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, toAllocate);
    assertThat(lock()).isEqualTo(lock);
    assertThat(CONTRACT_CALLS).isEmpty();

    rejectedByKubelet("intruder");
    assertThat(kubelet.allocate(List.of(GPU1 + "-4")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/victim");
    assertThat(annotations("victim")).containsEntry(HamiAnnotations.BIND_PHASE, "success");
  }

  @Test
  void aBypassPodWithTheHoldersCardsGetsNothing() {
    boundPod("victim", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    bypassPod("intruder", Map.of());
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-0"))).hasMessageContaining("default/victim keeps its grant");
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU1 + "-1"))).isInstanceOf(StatusRuntimeException.class);
    assertThat(events).as("one Event per pod").hasSize(1);
    assertThat(CONTRACT_CALLS).isEmpty();
    assertThat(annotations("victim")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating");
  }

  @Test
  void aBypassPodAloneIsRefusedWithAnEvent() {
    bypassPod("intruder", Map.of());
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0")))
        .hasMessageContaining("no pod placed by vgpu's scheduler is starting on node n1; refused: default/intruder");
    assertThat(events).singleElement().asString().startsWith("intruder SchedulerBypassed: ");
  }

  @Test
  void withoutVerificationGrantsAreTakenAsWritten() {
    serve(PodGrants.unverified());
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1024, 10))), "100", true);
    client.pods().inNamespace("default").withName("p1").edit(p -> new PodBuilder(p).editMetadata().removeFromAnnotations(GrantSignature.ANNOTATION).endMetadata().build());
    assertThat(kubelet.allocate(List.of(GPU1 + "-0")).getContainerResponses(0).getEnvsMap()).containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "1024m");
  }

  @Test
  void noPendingPodIsAClearError() {
    assertThatThrownBy(() -> kubelet.allocate(List.of("x"))).hasMessageContaining("no binding pod found on node n1");
  }

  @Test
  void preferredAllocationSteersKubeletToTheScheduledCards() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 1000, 10))), "100", true);
    var response = kubelet.pluginStub().getPreferredAllocation(PreferredAllocationRequest.newBuilder()
        .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder()
            .addAllAvailableDeviceIDs(List.of(GPU0 + "-0", GPU0 + "-1", GPU1 + "-4", GPU1 + "-5")).setAllocationSize(1))
        .build());
    assertThat(response.getContainerResponses(0).getDeviceIDsList()).containsExactly(GPU1 + "-4");
  }

  @Test
  void reRegistersWhenKubeletRestarts() throws Exception {
    kubelet.awaitRegistration();
    kubelet.stop();
    assertThat(plugin.ensureRegistered()).isFalse();
    kubelet.start();
    assertThat(plugin.ensureRegistered()).isTrue();
    assertThat(kubelet.awaitRegistration().getResourceName()).isEqualTo("nvidia.com/gpu");
    kubelet.watch();
    assertThat(kubelet.nextList(Duration.ofSeconds(10)).getDevicesCount()).isEqualTo(20);
  }
}
