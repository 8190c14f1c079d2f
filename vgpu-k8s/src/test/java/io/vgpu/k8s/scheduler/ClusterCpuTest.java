package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.core.Engine;
import io.vgpu.core.policy.VgpuPolicy;
import io.vgpu.core.policy.WorkloadClass;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The deployed scheduler feeds the engine's policies the cluster's CPU from its informers: each node's
 * allocatable CPU minus the CPU requests of the pods bound to it (GPU pods or not), a pod it reserved
 * counted from the filter on, each pod once; and its {@code vgpu} learns the pods it reserves with their
 * CPU and the card types they may use.
 */
@EnableKubernetesMockClient(crud = true)
class ClusterCpuTest {
  KubernetesClient client;
  ClusterHarness cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void freeCpuFollowsTheNodesAndThePodsOnThem() throws Exception {
    cluster = new ClusterHarness(client);
    client.nodes()
        .resource(
            new NodeBuilder()
                .withNewMetadata().withName("n1").withAnnotations(Map.of(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(ClusterHarness.cards("GPU-n1-", 2, 40_960)))).endMetadata()
                .withNewStatus().addToAllocatable("cpu", new Quantity("32")).addToAllocatable("nvidia.com/gpu", new Quantity("20")).endStatus()
                .build())
        .create();
    client.pods().inNamespace("default").resource(pod("web", "4", null, "n1")).create();
    cluster.start();
    Engine engine = cluster.server.engine();
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(28_000);

    Pod gpuPod = cluster.create(pod("train", "2", "A100", null));
    assertThat(cluster.filter(gpuPod, List.of("n1")).path("NodeNames").get(0).asString()).isEqualTo("n1");
    // Reserved by the filter: counted before kube-scheduler binds it.
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(26_000);
    PodRef train = new PodRef("default", "train");
    assertThat(cluster.bind(train, "n1").path("Error").asString("")).isEmpty();
    cluster.completeAllocation(train, "n1");
    ClusterHarness.await(() -> client.pods().inNamespace("default").withName("train").get().getSpec().getNodeName() != null, "the binding");
    // Bound and seen by the informer: still counted once.
    Thread.sleep(200);
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(26_000);

    client.pods().inNamespace("default").withName("web").delete();
    ClusterHarness.await(() -> engine.freeCpuMilli("n1") == 30_000, "the deleted pod's cpu to be given back");
    client.pods().inNamespace("default").withName("train").edit(p -> new PodBuilder(p).editOrNewStatus().withPhase("Succeeded").endStatus().build());
    ClusterHarness.await(() -> engine.freeCpuMilli("n1") == 32_000, "the finished pod's cpu to be given back");

    // The vgpu policy learned the pod it reserved, with its CPU; its type constraint ruled out no
    // registered type here, so it is no constraint.
    PodRequest probe =
        PodRequest.of(new PodRef("default", "probe"), List.of(ContainerRequest.devices("c", 1))).withOverrides(new PolicyOverrides("", "vgpu", ScoringWeights.DEFAULT));
    VgpuPolicy vgpu = (VgpuPolicy) engine.compile(probe).policy();
    assertThat(vgpu.workload().classes()).extracting(WorkloadClass::cpuMilli, WorkloadClass::cardTypes).containsExactly(tuple(2_000L, List.of()));
  }

  /**
   * With {@code --place-cpu-only-pods} the webhook hands a pod without GPUs to the scheduler and the
   * extender chooses its node: a node without vGPU cards when kube-scheduler found one feasible, else the
   * card node its policy prefers (HAMi's binpack: the busier node; spread: the emptier), counting its CPU
   * there from the filter on, once.
   */
  @Test
  void podsWithoutGpusArePlacedByThePolicyWhenAsked() throws Exception {
    cluster = new ClusterHarness(client);
    twoCardNodes("n1", "n2");
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("cpu1").endMetadata().withNewStatus().addToAllocatable("cpu", new Quantity("64")).endStatus().build()).create();
    cluster.start(SchedulerOptions.defaults().withCpuOnlyPodPlacement(true), io.vgpu.k8s.config.DeviceConfig.DEFAULT);
    Engine engine = cluster.server.engine();

    ClusterHarness.Admission admitted = cluster.admit(pod("batch", "6", null, null), "admission.k8s.io/v1");
    assertThat(admitted.pod().orElseThrow().getSpec().getSchedulerName()).isEqualTo("hami-scheduler");
    // A GPU pod on n1 makes it the busier card node.
    Pod gpuPod = cluster.create(pod("train", "2", "A100", null));
    assertThat(cluster.filter(gpuPod, List.of("n1")).path("NodeNames").get(0).asString()).isEqualTo("n1");

    Pod batch = cluster.create(admitted.pod().get());
    // A node without cards strands none: every such node goes back to kube-scheduler, nothing is counted yet.
    assertThat(cluster.filter(batch, List.of("n2", "cpu1", "n1")).path("NodeNames")).extracting(n -> n.asString()).containsExactly("cpu1");
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(30_000);
    // Card nodes only: binpack (the default node policy) picks the busier one, and counts the pod there at once.
    assertThat(cluster.filter(batch, List.of("n2", "n1")).path("NodeNames")).extracting(n -> n.asString()).containsExactly("n1");
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(24_000);
    assertThat(engine.grant(new PodRef("default", "batch"))).isEmpty();
    PodRef ref = new PodRef("default", "batch");
    assertThat(cluster.bind(ref, "n1").path("Error").asString("")).isEmpty();
    // The mock API server does not apply Bindings: set the node as the real one would.
    client.pods().inNamespace("default").withName("batch").edit(p -> new PodBuilder(p).editSpec().withNodeName("n1").endSpec().build());
    ClusterHarness.await(() -> cluster.server.engine() != null && client.pods().inNamespace("default").withName("batch").get().getSpec().getNodeName() != null, "the binding");
    Thread.sleep(200);
    assertThat(engine.freeCpuMilli("n1")).isEqualTo(24_000);
    assertThat(engine.freeCpuMilli("n2")).isEqualTo(32_000);

    // The pod's own node policy: spread picks the emptier card node, and the count moves with the pod.
    Pod spread = cluster.create(new PodBuilder(pod("spread", "4", null, null)).editMetadata().addToAnnotations(HamiAnnotations.NODE_SCHEDULER_POLICY, "spread").endMetadata().build());
    assertThat(cluster.filter(spread, List.of("n1", "n2")).path("NodeNames")).extracting(n -> n.asString()).containsExactly("n2");
    assertThat(engine.freeCpuMilli("n2")).isEqualTo(28_000);
    client.pods().inNamespace("default").withName("spread").delete();
    ClusterHarness.await(() -> engine.freeCpuMilli("n2") == 32_000, "the deleted pod's cpu to be given back");
  }

  /** The chart's pairing: CPU-only placement with {@code vgpu} as the cluster's default GPU policy, which a pod without annotations then gets. */
  @Test
  void podsWithoutGpusGetTheDefaultPlacementPolicy() throws Exception {
    cluster = new ClusterHarness(client);
    twoCardNodes("n1", "n2");
    cluster.start(SchedulerOptions.defaults().withCpuOnlyPodPlacement(true), io.vgpu.k8s.config.DeviceConfig.builder().gpuSchedulerPolicy("vgpu").build());
    Engine engine = cluster.server.engine();
    Pod batch = cluster.create(pod("batch", "6", null, null));
    assertThat(engine.compile(PodRequest.of(new PodRef("default", "batch"), List.of(ContainerRequest.none("c")))).policy()).isInstanceOf(VgpuPolicy.class);
    JsonNode chosen = cluster.filter(batch, List.of("n1", "n2")).path("NodeNames");
    assertThat(chosen).hasSize(1);
    assertThat(engine.freeCpuMilli(chosen.get(0).asString())).isEqualTo(26_000);
  }

  /** Nodes of two 40 GiB cards and 32 CPUs each. */
  private void twoCardNodes(String... names) {
    for (String name : names) {
      client.nodes()
          .resource(
              new NodeBuilder()
                  .withNewMetadata().withName(name).withAnnotations(Map.of(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(ClusterHarness.cards("GPU-" + name + "-", 2, 40_960)))).endMetadata()
                  .withNewStatus().addToAllocatable("cpu", new Quantity("32")).endStatus()
                  .build())
          .create();
    }
  }

  @Test
  void podsWithoutGpusPassThroughByDefault() throws Exception {
    cluster = new ClusterHarness(client);
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").withAnnotations(Map.of(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(ClusterHarness.cards("GPU-n1-", 2, 40_960)))).endMetadata().build()).create();
    cluster.start();
    Pod batch = cluster.create(pod("batch", "6", null, null));
    assertThat(cluster.admit(pod("other", "1", null, null), "admission.k8s.io/v1").pod().orElseThrow().getSpec().getSchedulerName()).isNull();
    assertThat(cluster.filter(batch, List.of("n1", "cpu1")).path("NodeNames")).extracting(n -> n.asString()).containsExactly("n1", "cpu1");
  }

  /** A pod asking for {@code cpu}; with a GPU model, also for a GPU under the vgpu policy; bound when a node is given. */
  private static Pod pod(String name, String cpu, String model, String node) {
    PodBuilder pod = new PodBuilder().withNewMetadata().withName(name).withNamespace("default").endMetadata();
    var container = pod.withNewSpec().withNodeName(node).addNewContainer().withName("c").withNewResources().addToRequests("cpu", new Quantity(cpu));
    if (model != null) {
      container.addToLimits("nvidia.com/gpu", new Quantity("1")).addToLimits("nvidia.com/gpumem", new Quantity("8000"));
    }
    pod = container.endResources().endContainer().endSpec();
    if (model != null) {
      pod.editMetadata()
          .addToAnnotations(HamiAnnotations.GPU_SCHEDULER_POLICY, "vgpu")
          .addToAnnotations(HamiAnnotations.USE_GPU_TYPE, model)
          .endMetadata();
    }
    return pod.build();
  }
}
