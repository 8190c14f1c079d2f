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

  /** A contract that reports what it was given, so the tests see exactly which grant reached it. */
  static final ContainerContract ECHO =
      (pod, uid, grant, env) -> {
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
    PodAllocator allocator = new PodAllocator(client, "n1", PodAllocator.contractOnly(ECHO), new NodeLock(client, Duration.ofMinutes(5), Clock.systemUTC()), false);
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
    initNames.forEach(n -> b.editSpec().addNewInitContainer().withName(n).endInitContainer().endSpec());
    appNames.forEach(n -> b.editSpec().addNewContainer().withName(n).endContainer().endSpec());
    Pod pod = client.pods().inNamespace("default").resource(b.build()).create();
    if (lock) {
      NodeLocks.lockFor(client, "n1", "default", name);
    }
    return pod;
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
    AllocateResponse response = kubelet.allocate(List.of(GPU0 + "-3"));
    assertThat(response.getContainerResponses(0).getEnvsMap())
        .containsEntry("NVIDIA_VISIBLE_DEVICES", GPU1)
        .containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "4096m")
        .containsEntry("CONTAINER", "gpu");
    String uid = client.pods().inNamespace("default").withName("p1").get().getMetadata().getUid();
    assertThat(response.getContainerResponses(0).getMounts(0).getHostPath()).isEqualTo("/host/" + uid);
    assertThat(annotations("p1"))
        .containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, ";")
        .containsEntry(HamiAnnotations.BIND_PHASE, "success");
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.NODE_LOCK);
  }

  @Test
  void multiContainerAndInitContainerPodsAreServedInContainerOrder() {
    boundPod("p1", List.of("init"), List.of("sidecar", "a", "b"),
        List.of(List.of(grant(GPU0, 1000, 10)), List.of(), List.of(grant(GPU0, 2000, 20), grant(GPU1, 2000, 20)), List.of(grant(GPU1, 3000, 30))), "100", true);
    assertThat(kubelet.allocate(List.of("x")).getContainerResponses(0).getEnvsMap()).containsEntry("CONTAINER", "init").containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "1000m");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "allocating");
    var a = kubelet.allocate(List.of("x", "y")).getContainerResponses(0).getEnvsMap();
    assertThat(a).containsEntry("CONTAINER", "a").containsEntry("NVIDIA_VISIBLE_DEVICES", GPU0 + "," + GPU1);
    var b = kubelet.allocate(List.of("z")).getContainerResponses(0).getEnvsMap();
    assertThat(b).containsEntry("CONTAINER", "b").containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "3000m");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, ";;;;").containsEntry(HamiAnnotations.BIND_PHASE, "success");
  }

  @Test
  void aCountMismatchFailsThePodAndReleasesTheNode() {
    boundPod("p1", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 1000, 10))), "100", true);
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0", GPU1 + "-0")))
        .isInstanceOf(StatusRuntimeException.class)
        .hasMessageContaining("device number not matched: pod default/p1 container 0 was granted 1 devices, kubelet asks for 2");
    assertThat(annotations("p1")).containsEntry(HamiAnnotations.BIND_PHASE, "failed");
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.NODE_LOCK);
  }

  @Test
  void twoPendingPodsAreToldApart() {
    // p-old was fully allocated already; p-new holds the lock and is the one kubelet is starting.
    boundPod("p-old", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 1000, 10))), "100", false);
    client.pods().inNamespace("default").withName("p-old").edit(p -> new PodBuilder(p).editMetadata()
        .addToAnnotations(HamiAnnotations.DEVICES_TO_ALLOCATE, ";").addToAnnotations(HamiAnnotations.BIND_PHASE, "success").endMetadata().build());
    boundPod("p-new", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 2000, 10))), "200", true);
    assertThat(kubelet.allocate(List.of("x")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/p-new");

    // Without a lock, the oldest bound pod that still has containers to allocate comes first.
    boundPod("q-late", List.of(), List.of("gpu"), List.of(List.of(grant(GPU1, 10, 1))), "400", false);
    boundPod("q-early", List.of(), List.of("gpu"), List.of(List.of(grant(GPU0, 20, 1))), "300", false);
    assertThat(kubelet.allocate(List.of("x")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/q-early");
    assertThat(kubelet.allocate(List.of("x")).getContainerResponses(0).getEnvsMap()).containsEntry("POD", "default/q-late");
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
