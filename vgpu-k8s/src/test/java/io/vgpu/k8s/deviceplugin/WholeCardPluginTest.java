package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.vgpu.api.spi.ContractSettings;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import io.vgpu.nvidia.NvidiaContainerContract;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code vgpu device-plugin --stack kai}: whole cards to kubelet as NVIDIA's device plugin serves them,
 * over real unix-socket gRPC, with the node labelled before kubelet hears of a card.
 */
@EnableKubernetesMockClient(crud = true)
class WholeCardPluginTest {
  static final String GPU0 = MockDeviceSource.uuid(MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
  static final String GPU1 = MockDeviceSource.uuid(MockDeviceSource.DEFAULT_UUID_PREFIX, 1);

  KubernetesClient client;
  @TempDir Path kubeletDir;
  @TempDir Path hook;
  FakeKubelet kubelet;
  KubeletPlugin plugin;
  NodeAgent agent;

  @AfterEach
  void stop() {
    if (plugin != null) {
      plugin.close();
    }
    if (agent != null) {
      agent.close();
    }
    kubelet.close();
  }

  private AdvertisedDevices serve(ContractSettings settings) throws Exception {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    kubelet = new FakeKubelet(kubeletDir);
    AdvertisedDevices advertised = new AdvertisedDevices(false, true);
    MockDeviceSource source = new MockDeviceSource(GpuProfiles.get("A100-SXM4-40GB"), 2, MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    new NodeRegistrar(client, "n1", source, new io.vgpu.core.DeviceRegistrar("NVIDIA"), io.vgpu.api.SharingConfig.DEFAULT, advertised).register();
    NvidiaContainerContract contract = new NvidiaContainerContract(settings);
    plugin = new KubeletPlugin(kubeletDir, "nvidia-gpu.sock", "nvidia.com/gpu", new DevicePluginService(advertised, new WholeCardAllocator(advertised, contract::wholeCards)));
    assertThat(plugin.ensureRegistered()).isTrue();
    return advertised;
  }

  @Test
  void everyCardOnceByItsUuidWithItsHealth() throws Exception {
    AdvertisedDevices advertised = serve(ContractSettings.DEFAULT);
    kubelet.watch();
    ListAndWatchResponse first = kubelet.nextList(Duration.ofSeconds(10));
    assertThat(first.getDevicesList()).extracting(d -> d.getID() + " " + d.getHealth()).containsExactly(GPU0 + " Healthy", GPU1 + " Healthy");
    var sick = new ArrayList<>(advertised.devices());
    sick.set(1, sick.get(1).withHealthy(false));
    advertised.update(sick);
    assertThat(kubelet.nextList(Duration.ofSeconds(10)).getDevicesList()).extracting(d -> d.getID() + " " + d.getHealth())
        .containsExactly(GPU0 + " Healthy", GPU1 + " Unhealthy");
  }

  @Test
  void allocateHandsOverTheCardsAndTheirDeviceNodesOnly(@TempDir Path root) throws Exception {
    Files.createDirectories(root.resolve("dev"));
    Files.createFile(root.resolve("dev/nvidiactl"));
    serve(ContractSettings.DEFAULT.withHookPath(hook.toString()).withDeviceSpecs(root.toString(), Map.of(GPU0, List.of("/dev/nvidia0"), GPU1, List.of("/dev/nvidia1"))));
    AllocateResponse response = kubelet.allocate(List.of(GPU1, GPU0));
    ContainerAllocateResponse c = response.getContainerResponses(0);
    assertThat(c.getEnvsMap()).isEqualTo(Map.of("NVIDIA_VISIBLE_DEVICES", GPU1 + "," + GPU0));
    assertThat(c.getMountsList()).as("no interposer, no limits").isEmpty();
    assertThat(c.getDevicesList()).extracting(d -> d.getContainerPath() + " <- " + d.getHostPath() + " " + d.getPermissions())
        .containsExactly("/dev/nvidia1 <- " + root + "/dev/nvidia1 rw", "/dev/nvidia0 <- " + root + "/dev/nvidia0 rw", "/dev/nvidiactl <- " + root + "/dev/nvidiactl rw");
    assertThat(hook.resolve("vgpu")).as("nothing written on the host").doesNotExist();
  }

  @Test
  void aDeviceIdThatIsNotACardOfThisNodeIsRefused() throws Exception {
    serve(ContractSettings.DEFAULT);
    assertThatThrownBy(() -> kubelet.allocate(List.of(GPU0 + "-0")))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
          assertThat(e.getStatus().getDescription()).isEqualTo("Allocate of " + GPU0 + "-0: device ID '" + GPU0 + "-0' is not a card of this node");
        });
  }

  @Test
  void thePreferredAllocationKeepsKubeletsMustIncludeAndOrder() throws Exception {
    serve(ContractSettings.DEFAULT);
    var preferred = kubelet.pluginStub().getPreferredAllocation(PreferredAllocationRequest.newBuilder()
        .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder().addAllAvailableDeviceIDs(List.of(GPU0, GPU1)).addMustIncludeDeviceIDs(GPU1).setAllocationSize(1))
        .build());
    assertThat(preferred.getContainerResponses(0).getDeviceIDsList()).containsExactly(GPU1);
  }

  @Test
  void theAgentUnderKaiLabelsTheNodeBeforeKubeletHearsOfACard() throws Exception {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    AtomicReference<Map<String, String>> labelsAtRegistration = new AtomicReference<>();
    AtomicReference<Boolean> mountSourcesAtRegistration = new AtomicReference<>();
    kubelet = new FakeKubelet(kubeletDir) {
      @Override
      void onRegister() {
        Node node = client.nodes().withName("n1").get();
        labelsAtRegistration.set(node.getMetadata().getLabels());
        // the webhook's hostPath Directory volumes: a fraction pod cannot mount them before they exist
        mountSourcesAtRegistration.set(Files.isDirectory(hook.resolve("vgpu/kai")) && Files.isDirectory(hook.resolve("vgpu/containers")));
      }
    };
    MockDeviceSource gpus = new MockDeviceSource(GpuProfiles.get("A100-SXM4-40GB"), 2, MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    agent = NodeAgent.start(
        new NodeAgent.Options("n1", hook, kubeletDir, "nvidia-gpu.sock", "", false, NodeAgent.Stack.KAI, kubeletDir.resolve("pod-resources.sock")),
        DeviceConfig.DEFAULT, gpus, client, Clock.systemUTC());
    assertThat(kubelet.awaitRegistration().getResourceName()).isEqualTo("nvidia.com/gpu");
    assertThat(labelsAtRegistration.get())
        .containsEntry(KaiKeys.NODE_GPU_PRODUCT_LABEL, "NVIDIA-A100-SXM4-40GB")
        .containsEntry(KaiKeys.NODE_GPU_MEMORY_LABEL, "40960")
        .containsEntry(KaiKeys.NODE_GPU_COUNT_LABEL, "2");
    assertThat(mountSourcesAtRegistration.get()).isTrue();
    kubelet.watch();
    assertThat(kubelet.nextList(Duration.ofSeconds(10)).getDevicesList()).extracting(d -> d.getID()).containsExactly(GPU0, GPU1);
    assertThat(agent.kaiGrants()).isNotNull();

    // A fraction pod bound here gets its region directory from the agent's own reconcile loop.
    client.pods().resource(new PodBuilder().withNewMetadata().withNamespace("team").withName("shared").withUid("uid-s").addToAnnotations(KaiKeys.GPU_MEMORY, "20480").endMetadata()
        .withNewSpec().withNodeName("n1").addNewContainer().withName("main")
        .addNewVolumeMount().withName(KaiKeys.GRANT_VOLUME).withMountPath("/etc/vgpu").endVolumeMount().endContainer()
        .addNewVolume().withName(KaiKeys.GRANT_VOLUME).withNewHostPath().withPath(hook + "/vgpu/kai").endHostPath().endVolume().endSpec().build()).create();
    String uid = client.pods().inNamespace("team").withName("shared").get().getMetadata().getUid();
    Path region = hook.resolve("vgpu/containers/" + uid + "_main");
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    // created, then made sticky: wait for the second step, not only the first
    while (!(Files.isDirectory(region) && ((Integer) Files.getAttribute(region, "unix:mode") & 07777) == 01777) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertThat((Integer) Files.getAttribute(region, "unix:mode") & 07777).isEqualTo(01777);

    // Grant files live as long as their pod: a gone pod's are removed, a live pod's kept.
    Path live = Files.createDirectories(hook.resolve("vgpu/kai/" + uid + "_main"));
    Path gone = Files.createDirectories(hook.resolve("vgpu/kai/uid-gone_main"));
    Files.writeString(live.resolve("limits"), "END\n");
    Files.writeString(gone.resolve("limits"), "END\n");
    agent.cleanUp();
    assertThat(live.resolve("limits")).exists();
    assertThat(gone).doesNotExist();
  }
}
