package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.core.Engine;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.simulate.Phase;
import io.vgpu.k8s.testing.ContractProviders;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationResult;
import io.vgpu.k8s.simulate.Simulator;
import io.vgpu.k8s.testing.NodeLocks;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import io.vgpu.nvidia.Interposer;
import io.vgpu.nvidia.NvidiaContainerContractProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The node agent assembled, against an in-process kubelet and a CRUD mock API server: what a container
 * receives from Allocate equals, byte for byte, what {@code vgpu simulate} prints for the same pod.
 */
@EnableKubernetesMockClient(crud = true)
class NodeAgentTest {
  KubernetesClient client;
  @TempDir Path kubeletDir;
  @TempDir Path hook;
  FakeKubelet kubelet;
  NodeAgent agent;
  Scenario scenario;

  @BeforeEach
  void start() throws Exception {
    scenario = new ScenarioParser(Set.of()).parse(Path.of("src/test/resources/deviceplugin/node.yaml"));
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    kubelet = new FakeKubelet(kubeletDir);
    MockDeviceSource gpus = new MockDeviceSource(GpuProfiles.get("A100-SXM4-40GB"), 2, MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    agent = NodeAgent.start(
        new NodeAgent.Options("n1", hook, kubeletDir, "nvidia-gpu.sock", "127.0.0.1:0", false), scenario.config(), gpus, client, Clock.systemUTC());
    kubelet.awaitRegistration();
  }

  @AfterEach
  void stop() {
    agent.close();
    kubelet.close();
  }

  /** Creates the pod as the scheduler and bind leave it, with the lock taken, from simulate's outcome. */
  private Pod bound(Pod manifest, SimulationResult.PodOutcome outcome) {
    PodBuilder b = new PodBuilder(manifest).editMetadata().withNamespace(outcome.pod().namespace())
        .addToAnnotations(outcome.annotations())
        .addToAnnotations(HamiAnnotations.BIND_PHASE, "allocating")
        .addToAnnotations(HamiAnnotations.BIND_TIME, "100")
        .addToLabels(HamiAnnotations.ASSIGNED_NODE, "n1")
        .endMetadata()
        .editSpec().withNodeName("n1").endSpec()
        .withNewStatus().withPhase("Pending").endStatus();
    Pod pod = client.pods().inNamespace(outcome.pod().namespace()).resource(b.build()).create();
    NodeLocks.lockFor(client, "n1", outcome.pod().namespace(), outcome.pod().name());
    return pod;
  }

  @Test
  void allocateGivesEachContainerExactlyTheEnvSimulatePrints() throws Exception {
    ContainerContractProvider onThisNode = ContractProviders.withHookPath(new NvidiaContainerContractProvider(), hook);
    SimulationResult expected = new Simulator(scenario, () -> Engine.builder().loadPoliciesFromClassPath(false), onThisNode).replay();
    Map<String, Pod> manifests = new java.util.HashMap<>();
    for (ScenarioEvent e : scenario.events()) {
      if (e instanceof ScenarioEvent.Create c) {
        manifests.put(c.ref().name(), c.pod());
      }
    }
    int compared = 0;
    for (SimulationResult.PodOutcome outcome : expected.pods()) {
      assertThat(outcome.phase()).isEqualTo(Phase.RUNNING);
      Pod pod = bound(manifests.get(outcome.pod().name()), outcome);
      List<SimulationResult.ContainerOutcome> containers = new ArrayList<>(outcome.initContainers());
      containers.addAll(outcome.containers());
      for (SimulationResult.ContainerOutcome container : containers) {
        if (container.devices().isEmpty()) {
          continue;
        }
        // the replicas GetPreferredAllocation steers kubelet to: one of each granted card
        List<String> ids = container.devices().stream().map(d -> AdvertisedDevices.replicaId(d.uuid(), 0)).toList();
        var response = kubelet.allocate(ids).getContainerResponses(0);
        Map<String, String> env = response.getEnvsMap();
        assertThat(new java.util.TreeMap<>(env)).as(outcome.pod() + "/" + container.name()).isEqualTo(new java.util.TreeMap<>(container.env()));
        // two-containers/b sets CUDA_DISABLE_CONTROL=true in its spec: a pod cannot switch its limits off
        assertThat(response.getMountsList()).as(outcome.pod() + "/" + container.name() + " is preloaded")
            .anyMatch(m -> m.getContainerPath().equals("/etc/ld.so.preload") && m.getReadOnly());
        compared++;
      }
      Map<String, String> after = client.pods().inNamespace(outcome.pod().namespace()).withName(outcome.pod().name()).get().getMetadata().getAnnotations();
      assertThat(after).containsEntry(HamiAnnotations.BIND_PHASE, "success");
      assertThat(pod).isNotNull();
    }
    assertThat(compared).isEqualTo(6);
  }

  @Test
  void preparesTheHostAndCleansUpWhenThePodIsGone() throws Exception {
    SimulationResult expected = new Simulator(scenario, () -> Engine.builder().loadPoliciesFromClassPath(false), new NvidiaContainerContractProvider()).replay();
    SimulationResult.PodOutcome single = expected.pods().stream().filter(p -> p.pod().name().equals("single")).findFirst().orElseThrow();
    Pod manifest = new PodBuilder().withNewMetadata().withName("single").endMetadata()
        .withNewSpec().addToContainers(new Container()).endSpec().build();
    manifest.getSpec().getContainers().get(0).setName("gpu");
    Pod pod = bound(manifest, single);
    String uid = pod.getMetadata().getUid();
    kubelet.allocate(List.of(AdvertisedDevices.replicaId(single.containers().get(0).devices().get(0).uuid(), 0)));

    Path containerDir = hook.resolve("vgpu/containers/" + uid + "_gpu");
    Path limits = hook.resolve("vgpu/limits/" + uid + "_gpu");
    assertThat(containerDir).isDirectory();
    assertThat(Files.readString(limits)).contains("CUDA_DEVICE_MEMORY_LIMIT_0=4096m").contains("CUDA_DEVICE_SM_LIMIT=25").endsWith("\nEND\n");
    if (Interposer.bundled()) {
      assertThat(hook.resolve("vgpu/libvgpu.so")).isRegularFile();
      assertThat(Files.readString(hook.resolve("vgpu/ld.so.preload")).strip()).isEqualTo(hook.resolve("vgpu/libvgpu.so").toString());
    }

    // The monitor reports the container at once, before it ever touches the GPU.
    HttpResponse<String> metrics = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + agent.monitorPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(metrics.body()).contains("hami_vgpu_memory_limit_bytes{container=\"gpu\",device_uuid=\"" + MockDeviceSource.DEFAULT_UUID_PREFIX + "00\",namespace=\"default\",pod=\"single\"");

    client.pods().inNamespace("default").withName("single").delete();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (Files.exists(containerDir) && System.nanoTime() < deadline) {
      agent.cleanUp();
      Thread.sleep(50);
    }
    assertThat(containerDir).doesNotExist();
    assertThat(limits).doesNotExist();
  }
}
