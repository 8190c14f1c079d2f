package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.core.Engine;
import io.vgpu.core.policy.VgpuPolicy;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.scheduler.SchedulerOptions;
import io.vgpu.k8s.scheduler.SchedulerServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A small trace run both ways must agree pod for pod: by the as-deployed benchmark, which calls the
 * engine as the extender does, and by the real {@code vgpu scheduler} on a (mock) API server, sent
 * each pod as Kubernetes objects over HTTP (filter in node-cache mode with the same candidate nodes,
 * then the binding), its CPU and card types coming from its own informers. Same node and cards for
 * every GPU pod, the same free CPU on every node after every pod, and the same learned workload. With
 * {@code --cpu-only-pods policy} the scheduler runs with {@code --place-cpu-only-pods} and places the
 * CPU-only pods too, each on the same node as the benchmark.
 */
@EnableKubernetesMockClient(crud = true)
class AsDeployedEquivalenceTest {
  private static final String NAMESPACE = AsDeployedSimulation.NAMESPACE;

  KubernetesClient client;
  private SchedulerServer server;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  @ParameterizedTest
  @EnumSource(AsDeployedSimulation.CpuOnlyPods.class)
  void theBenchmarkAndTheSchedulerPlaceEveryPodAlike(AsDeployedSimulation.CpuOnlyPods cpuOnlyPods) throws Exception {
    Trace trace = trace();
    List<TraceNode> nodes = trace.nodes();
    int[] order = IntStream.range(0, nodes.size()).map(i -> (i * 7) % nodes.size()).toArray();
    AsDeployedSimulation bench =
        new AsDeployedSimulation(nodes, "vgpu", order, PreparedTrace.of(trace).typical(), AsDeployedSimulation.Setup.chart(cpuOnlyPods));
    for (TraceNode node : nodes) {
      client.nodes()
          .resource(
              new NodeBuilder()
                  .withNewMetadata()
                  .withName(node.name())
                  .withAnnotations(Map.of(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(AsDeployedSimulation.devicesOf(node))))
                  .endMetadata()
                  .withNewStatus()
                  .addToAllocatable("cpu", new Quantity(node.cpuMilli() + "m"))
                  .addToAllocatable("memory", new Quantity(node.memoryMiB() + "Mi"))
                  .addToAllocatable("nvidia.com/gpu", new Quantity(Integer.toString(node.gpus() * SimCluster.UNLIMITED_SHARERS)))
                  .endStatus()
                  .build())
          .create();
    }
    boolean placedByScheduler = cpuOnlyPods == AsDeployedSimulation.CpuOnlyPods.POLICY;
    SchedulerOptions options = SchedulerOptions.defaults().withBinds("127.0.0.1:0", "127.0.0.1:0").withCpuOnlyPodPlacement(placedByScheduler);
    server = SchedulerServer.start(options, DeviceConfig.DEFAULT, client, Clock.systemUTC());
    Engine scheduler = server.engine();

    int gpuPods = 0;
    int cpuOnlyPlaced = 0;
    for (int p = 0; p < trace.pods().size(); p++) {
      TracePod pod = trace.pods().get(p);
      PodRef ref = AsDeployedSimulation.refOf(p, pod);
      List<String> candidates = bench.feasible(pod);
      Optional<String> expected = bench.schedule(pod, ref);
      if (pod.gpus() == 0 && placedByScheduler) {
        client.pods().inNamespace(NAMESPACE).resource(podOf(pod, ref, null)).create();
        JsonNode filtered = filter(ref, candidates);
        assertThat(filtered.path("Error").asString("")).as(ref.name()).isEmpty();
        List<String> chosen = new ArrayList<>();
        filtered.path("NodeNames").forEach(n -> chosen.add(n.asString()));
        assertThat(chosen).as("node of CPU-only %s", ref.name()).isEqualTo(expected.map(List::of).orElse(List.of()));
        assertThat(client.pods().inNamespace(NAMESPACE).withName(ref.name()).get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.DEVICES_ALLOCATED);
        if (expected.isPresent()) {
          cpuOnlyPlaced++;
          bind(ref, expected.get());
        }
      } else if (pod.gpus() == 0) {
        // kube-scheduler places it alone; the scheduler only hears of it through its pod informer.
        expected.ifPresent(node -> client.pods().inNamespace(NAMESPACE).resource(podOf(pod, ref, node)).create());
      } else {
        client.pods().inNamespace(NAMESPACE).resource(podOf(pod, ref, null)).create();
        JsonNode filtered = filter(ref, candidates);
        assertThat(filtered.path("Error").asString("")).as(ref.name()).isEmpty();
        JsonNode chosen = filtered.path("NodeNames");
        Optional<String> actual = chosen.isArray() && !chosen.isEmpty() ? Optional.of(chosen.get(0).asString()) : Optional.empty();
        assertThat(actual).as("node of %s", ref.name()).isEqualTo(expected);
        if (actual.isPresent()) {
          gpuPods++;
          assertThat(grantOf(ref, actual.get())).as("cards of %s", ref.name()).isEqualTo(bench.engine().grant(ref).orElseThrow());
          bind(ref, actual.get());
        }
      }
      // What kube-scheduler has placed, the scheduler sees through its informers before the next pod.
      for (TraceNode node : nodes) {
        long cpu = bench.engine().freeCpuMilli(node.name());
        await(() -> scheduler.freeCpuMilli(node.name()) == cpu, "free cpu of " + node.name() + " after " + ref.name() + " to be " + cpu);
      }
    }
    assertThat(gpuPods).isGreaterThan(30);
    assertThat(cpuOnlyPlaced > 0).as("CPU-only pods placed through the extender").isEqualTo(placedByScheduler);
    VgpuPolicy learnedHere = vgpuOf(bench.engine());
    VgpuPolicy learnedThere = vgpuOf(scheduler);
    assertThat(learnedThere.workload().classes()).isNotEmpty().containsExactlyElementsOf(learnedHere.workload().classes());
    for (int c = 0; c < learnedHere.workload().classes().size(); c++) {
      assertThat(learnedThere.workload().weight(c)).isEqualTo(learnedHere.workload().weight(c));
    }
    assertThat(learnedThere.contention("T4")).isEqualTo(learnedHere.contention("T4")).isGreaterThan(0);
  }

  /** 16 nodes of two models, and pods of every kind: shares, whole and multi-GPU, typed, CPU-only. */
  private static Trace trace() {
    List<TraceNode> nodes = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      nodes.add(new TraceNode(String.format("g2-%02d", i), 64_000, 262_144, 4, "G2"));
      nodes.add(new TraceNode(String.format("t4-%02d", i), 24_000, 131_072, 2, "T4"));
    }
    int[] shares = {1000, 500, 250, 1000, 0, 750, 320, 1000};
    List<TracePod> pods = new ArrayList<>();
    for (int i = 0; i < 90; i++) {
      int milli = shares[i % shares.length];
      int gpus = milli == 0 ? 0 : i % 23 == 0 ? 2 : 1;
      List<String> spec = i % 5 == 1 ? List.of("T4") : List.of();
      pods.add(new TracePod(String.format("pod-%02d", i), 2_000 + 1_500L * (i % 7), 4_096, gpus, milli, spec));
    }
    return new Trace("equivalence", nodes, pods);
  }

  /** The pod the trace describes, as a manifest: its requests, GPU limits and policy annotations. */
  private static Pod podOf(TracePod pod, PodRef ref, String node) {
    ContainerBuilder container =
        new ContainerBuilder()
            .withName("main")
            .withNewResources()
            .addToRequests("cpu", new Quantity(pod.cpuMilli() + "m"))
            .addToRequests("memory", new Quantity(pod.memoryMiB() + "Mi"))
            .endResources();
    Map<String, String> annotations = new LinkedHashMap<>();
    // Every pod names the policy (a cluster would rather make it the default: --gpu-scheduler-policy).
    annotations.put(HamiAnnotations.GPU_SCHEDULER_POLICY, "vgpu");
    if (pod.gpus() > 0) {
      container
          .editResources()
          .addToLimits("nvidia.com/gpu", new Quantity(Integer.toString(pod.gpus())))
          .addToLimits("nvidia.com/gpumem", new Quantity(Integer.toString(pod.gpuMilli() * SimCluster.MIB_PER_MILLI)))
          .addToLimits("nvidia.com/gpucores", new Quantity(Integer.toString(SimCluster.coresOf(pod.gpuMilli()))))
          .endResources();
      if (!pod.gpuSpec().isEmpty()) {
        annotations.put(HamiAnnotations.USE_GPU_TYPE, String.join(",", pod.gpuSpec()));
      }
    }
    return new PodBuilder()
        .withNewMetadata().withName(ref.name()).withNamespace(ref.namespace()).withAnnotations(annotations).endMetadata()
        .withNewSpec().withNodeName(node).withContainers(container.build()).endSpec()
        .build();
  }

  private JsonNode filter(PodRef ref, List<String> candidates) throws Exception {
    ObjectNode args = PodJson.mapper().createObjectNode();
    args.set("Pod", PodJson.toTree(client.pods().inNamespace(ref.namespace()).withName(ref.name()).get()));
    args.putNull("Nodes");
    ArrayNode names = args.putArray("NodeNames");
    candidates.forEach(names::add);
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.extenderPort() + "/filter")).POST(HttpRequest.BodyPublishers.ofString(args.toString())).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(200);
    return PodJson.mapper().readTree(response.body());
  }

  /**
   * The grant the filter wrote into the pod. The filter writes it behind its answer (the bind waits for
   * it), so this waits for it to arrive as the bind would.
   */
  private PodGrant grantOf(PodRef ref, String node) throws InterruptedException {
    await(() -> allocatedOf(ref) != null, "the decision of " + ref.name() + " to be written");
    return DeviceListCodec.decodeGrant(ref, node, allocatedOf(ref), List.of(), List.of("main"));
  }

  private String allocatedOf(PodRef ref) {
    Pod pod = client.pods().inNamespace(ref.namespace()).withName(ref.name()).get();
    return pod.getMetadata().getAnnotations().get(HamiAnnotations.DEVICES_ALLOCATED);
  }

  /** What the Binding does (the mock API server stores Bindings without applying them). */
  private void bind(PodRef ref, String node) {
    client.pods().inNamespace(ref.namespace()).withName(ref.name()).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"spec\":{\"nodeName\":\"" + node + "\"}}");
  }

  private static VgpuPolicy vgpuOf(Engine engine) {
    PodRequest probe =
        PodRequest.of(new PodRef(NAMESPACE, "probe"), List.of(ContainerRequest.devices("main", 1))).withOverrides(new PolicyOverrides("", "vgpu", ScoringWeights.DEFAULT));
    return (VgpuPolicy) engine.compile(probe).policy();
  }

  private static void await(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      Thread.sleep(5);
    }
  }
}
