package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Library;
import com.sun.jna.Native;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.nvidia.Nvml;
import io.vgpu.nvidia.NvidiaDeviceSource;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node agent on two GPUs read through vgpu-native's mock NVML ({@code two-a100.list}), against an
 * in-process kubelet and a CRUD mock API server: registration with kubelet and the scheduler, a
 * critical Xid reaching both as ill health, and a GPU that falls off the bus disappearing from both.
 * Runs in the {@code mock-node} surefire execution, which points JNA and the mock at their files.
 */
@Tag("mock-node")
@EnableKubernetesMockClient(crud = true)
class NodeAgentNvmlTest {
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String GPU0 = "GPU-0de0a100-0000-4000-8000-000000000000";
  private static final String GPU1 = "GPU-0de0a100-0000-4000-8000-000000000001";

  /** The failure injection the mock NVML exports. */
  interface MockControl extends Library {
    int vgpuMockSetDeviceLost(int physicalIndex, int lost);

    int vgpuMockRaiseXid(int physicalIndex, long xid);
  }

  KubernetesClient client;
  @TempDir Path kubeletDir;
  @TempDir Path hook;
  FakeKubelet kubelet;
  NodeAgent agent;
  MockControl control;

  @BeforeEach
  void start() throws Exception {
    Path nativeDir = Path.of(System.getProperty("jna.library.path", "../vgpu-native/target/native"));
    assumeTrue(Files.exists(nativeDir.resolve("libnvidia-ml.so.1")), nativeDir + " has no mock NVML (vgpu-native needs a C compiler): skipped");
    String state = System.getenv("VGPU_MOCK_STATE");
    assumeTrue(state != null, "run through the mock-node surefire execution: VGPU_MOCK_STATE is not set");
    Files.deleteIfExists(Path.of(state));
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    kubelet = new FakeKubelet(kubeletDir);
    NvidiaDeviceSource gpus = new NvidiaDeviceSource(Nvml.open(), NvidiaDeviceSource.Options.DEFAULT);
    control = Native.load(Nvml.LIBRARY, MockControl.class);
    agent = NodeAgent.start(new NodeAgent.Options("n1", hook, kubeletDir, "nvidia-gpu.sock", "", false), DeviceConfig.DEFAULT, gpus, client, Clock.systemUTC());
  }

  @AfterEach
  void stop() throws IOException {
    if (agent != null) {
      agent.close();
      kubelet.close();
      control.vgpuMockSetDeviceLost(1, 0);
    }
  }

  @Test
  void registersWithKubeletAndTheScheduler() throws Exception {
    assertThat(kubelet.awaitRegistration().getResourceName()).isEqualTo("nvidia.com/gpu");
    kubelet.watch();
    ListAndWatchResponse list = kubelet.nextList(WAIT);
    assertThat(list.getDevicesList()).hasSize(20).allSatisfy(d -> assertThat(d.getHealth()).isEqualTo("Healthy"));
    assertThat(list.getDevicesList()).filteredOn(d -> d.getID().startsWith(GPU1 + "-")).hasSize(10);

    Node node = awaitNode(n -> registered(n).size() == 2);
    assertThat(registered(node)).extracting(SchedulableDevice::uuid).containsExactly(GPU0, GPU1);
    assertThat(registered(node)).allSatisfy(d -> {
      assertThat(d.memoryMiB()).isEqualTo(40960);
      assertThat(d.splitCount()).isEqualTo(10);
      assertThat(d.healthy()).isTrue();
    });
    assertThat(node.getMetadata().getLabels())
        .containsEntry(NodeRegistrar.PRODUCT_LABEL, "NVIDIA-A100-SXM4-40GB")
        .containsEntry(NodeRegistrar.MEMORY_LABEL, "40960")
        .containsEntry(NodeRegistrar.COUNT_LABEL, "2");
  }

  @Test
  void aCriticalXidReachesKubeletAndTheRegisterAnnotation() throws Exception {
    kubelet.awaitRegistration();
    kubelet.watch();
    kubelet.nextList(WAIT);
    awaitNode(n -> registered(n).size() == 2);

    assertThat(control.vgpuMockRaiseXid(0, 48)).isZero(); // double-bit ECC error
    ListAndWatchResponse list = kubelet.nextList(WAIT);
    assertThat(list.getDevicesList()).hasSize(20);
    assertThat(list.getDevicesList()).filteredOn(d -> d.getHealth().equals("Unhealthy")).hasSize(10).allSatisfy(d -> assertThat(d.getID()).startsWith(GPU0 + "-"));
    Node node = awaitNode(n -> registered(n).stream().anyMatch(d -> !d.healthy()));
    assertThat(registered(node)).extracting(SchedulableDevice::uuid, SchedulableDevice::healthy)
        .containsExactly(tuple(GPU0, false), tuple(GPU1, true));
  }

  @Test
  void aGpuThatFallsOffTheBusDisappearsFromKubeletAndTheRegisterAnnotation() throws Exception {
    kubelet.awaitRegistration();
    kubelet.watch();
    kubelet.nextList(WAIT);
    awaitNode(n -> registered(n).size() == 2);

    assertThat(control.vgpuMockSetDeviceLost(1, 1)).isZero();
    ListAndWatchResponse list = kubelet.nextList(WAIT);
    assertThat(list.getDevicesList()).hasSize(10).allSatisfy(d -> {
      assertThat(d.getID()).startsWith(GPU0 + "-");
      assertThat(d.getHealth()).isEqualTo("Healthy");
    });
    Node node = awaitNode(n -> registered(n).size() == 1);
    assertThat(registered(node)).extracting(SchedulableDevice::uuid).containsExactly(GPU0);
    assertThat(node.getMetadata().getLabels()).containsEntry(NodeRegistrar.COUNT_LABEL, "1");
  }

  private static List<SchedulableDevice> registered(Node node) {
    Map<String, String> annotations = node.getMetadata().getAnnotations();
    String value = annotations == null ? null : annotations.get(HamiAnnotations.NODE_REGISTER);
    return value == null ? List.of() : NodeRegisterCodec.decode(value);
  }

  private Node awaitNode(Predicate<Node> condition) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    Node node = client.nodes().withName("n1").get();
    while (!condition.test(node)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("node n1 never reached the expected state; annotations " + node.getMetadata().getAnnotations());
      }
      Thread.sleep(50);
      node = client.nodes().withName("n1").get();
    }
    return node;
  }
}
