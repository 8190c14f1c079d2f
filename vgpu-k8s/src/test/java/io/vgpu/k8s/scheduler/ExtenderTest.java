package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodJson;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/** The extender over real HTTP against a CRUD mock API server. */
@EnableKubernetesMockClient(crud = true)
class ExtenderTest {
  KubernetesClient client;
  ClusterHarness cluster;

  static final String W1 = "GPU-12345678-1234-1234-1234-1234567800";
  static final String W2 = "GPU-22345678-1234-1234-1234-1234567800";

  @BeforeEach
  void start() throws Exception {
    cluster = new ClusterHarness(client);
    cluster.node("worker1", Map.of("gpu", "on"), Map.of(), ClusterHarness.cards(W1, 2, 40960));
    cluster.node("worker2", Map.of("gpu", "on"), Map.of(), ClusterHarness.cards(W2, 2, 40960));
    cluster.start();
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  static Pod gpuPod(String namespace, String name, Map<String, String> limits, Map<String, String> annotations) {
    PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace(namespace).withAnnotations(annotations).endMetadata()
        .withNewSpec().addNewContainer().withName("gpu").withImage("busybox").withNewResources().endResources().endContainer().endSpec();
    Pod pod = b.build();
    limits.forEach((k, v) -> pod.getSpec().getContainers().get(0).getResources().getLimits().put(k, new Quantity(v)));
    return pod;
  }

  @Test
  void filterPicksOneNodeWritesTheDecisionAndReserves() throws Exception {
    Pod pod = cluster.create(gpuPod("default", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096", "nvidia.com/gpucores", "25"), Map.of()));
    JsonNode result = cluster.filter(pod, List.of("worker1", "worker2"));
    assertThat(result.path("Error").asString()).isEmpty();
    assertThat(result.path("NodeNames").toString()).isEqualTo("[\"worker1\"]");
    Pod annotated = client.pods().inNamespace("default").withName("p1").get();
    assertThat(annotated.getMetadata().getAnnotations())
        .containsEntry(HamiAnnotations.ASSIGNED_NODE, "worker1")
        .containsEntry(HamiAnnotations.DEVICES_ALLOCATED, W1 + "00,NVIDIA,4096,25:;")
        .containsEntry(HamiAnnotations.DEVICES_TO_ALLOCATE, W1 + "00,NVIDIA,4096,25:;")
        .containsKey(HamiAnnotations.ASSIGNED_TIME);
    assertThat(annotated.getMetadata().getLabels()).containsEntry(HamiAnnotations.ASSIGNED_NODE, "worker1");
    assertThat(cluster.server.engine().grant(new PodRef("default", "p1"))).isPresent();
  }

  @Test
  void aDecisionTheApiServerRefusesIsGivenBackWithAnEvent() throws Exception {
    // A pod the API server does not have: the filter reserves and answers, then its patch is refused (404).
    Pod gone = gpuPod("default", "gone", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096"), Map.of());
    gone.getMetadata().setUid("0b9d7c55-1f3e-4c1a-9a55-6f0e7d1e2a10");
    JsonNode result = cluster.filterAsSent(gone, List.of("worker1"));
    assertThat(result.path("Error").asString()).isEmpty();
    assertThat(result.path("NodeNames").toString()).isEqualTo("[\"worker1\"]");
    PodRef ref = new PodRef("default", "gone");
    ClusterHarness.await(() -> cluster.server.engine().grant(ref).isEmpty(), "the reservation given back");
    ClusterHarness.await(
        () -> client.v1().events().inNamespace("default").list().getItems().stream().anyMatch(e -> "FilteringFailed".equals(e.getReason())),
        "a FilteringFailed event");
    var event = client.v1().events().inNamespace("default").list().getItems().stream().filter(e -> "FilteringFailed".equals(e.getReason())).findFirst().orElseThrow();
    assertThat(event.getMessage()).startsWith("writing the scheduling decision failed: ").endsWith("; the reservation on node worker1 is given back");
    assertThat(event.getType()).isEqualTo("Warning");
  }

  @Test
  void aBindStraightAfterTheFilterWaitsForTheDecisionAndBinds() throws Exception {
    for (int i = 0; i < 8; i++) {
      String name = "quick-" + i;
      Pod pod = cluster.create(gpuPod("default", name, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
      JsonNode filtered = cluster.filterAsSent(pod, List.of("worker" + (1 + i % 2)));
      String node = filtered.path("NodeNames").get(0).asString();
      JsonNode bound = cluster.bind(new PodRef("default", name), node);
      assertThat(bound.toString()).as(name).isEqualTo("{\"Error\":\"\"}");
      assertThat(client.pods().inNamespace("default").withName(name).get().getMetadata().getAnnotations()).containsEntry(HamiAnnotations.ASSIGNED_NODE, node);
      cluster.completeAllocation(new PodRef("default", name), node);
    }
  }

  /**
   * What the extender's listener answers on its I/O thread: a synced scheduler's filter of an ordinary
   * pod is answered at once; a bind whose decision is already written would take the node's lock (an API
   * write) on the calling thread, so it is left for a worker, and nothing is done before it gets there.
   */
  @Test
  void theFilterIsAnsweredAtOnceAndABindThatWouldWriteIsLeftToAWorkerUntouched() throws Exception {
    cluster.create(gpuPod("default", "now", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    Pod current = client.pods().inNamespace("default").withName("now").get();
    ExtenderApi.ExtenderFilterResult answer = cluster.server.extender().filterAtOnce(new ExtenderApi.ExtenderArgs(current, null, List.of("worker1")));
    assertThat(answer).isNotNull();
    assertThat(answer.nodeNames()).containsExactly("worker1");
    PodRef ref = new PodRef("default", "now");
    cluster.server.extender().decisionWritten(ref).get(30, TimeUnit.SECONDS);
    ExtenderApi.ExtenderBindingArgs bind = new ExtenderApi.ExtenderBindingArgs("now", "default", current.getMetadata().getUid(), "worker1");
    assertThat(cluster.server.extender().bindWithoutWaiting(bind, new CompletableFuture<>())).isNull();
    assertThat(client.nodes().withName("worker1").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.NODE_LOCK);
    assertThat(client.bindings().inNamespace("default").withName("now").get()).isNull();
    assertThat(cluster.bind(ref, "worker1").path("Error").asString()).isEmpty();
    assertThat(client.bindings().inNamespace("default").withName("now").get().getTarget().getName()).isEqualTo("worker1");
  }

  @Test
  void aPodThatFitsNowhereGetsHamisReasonsPerNodeAndAnEventWithTheNearestFix() throws Exception {
    Pod big = cluster.create(gpuPod("default", "big", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "50000"), Map.of()));
    JsonNode result = cluster.filter(big, List.of("worker1", "worker2", "ghost"));
    assertThat(result.path("NodeNames").isNull()).isTrue();
    assertThat(result.path("Error").asString()).isEmpty();
    assertThat(result.path("FailedNodes").toString())
        .isEqualTo("{\"worker1\":\"2/2 CardInsufficientMemory\",\"worker2\":\"2/2 CardInsufficientMemory\",\"ghost\":\"node unregistered\"}");
    ClusterHarness.await(() -> !client.v1().events().inNamespace("default").list().getItems().isEmpty(), "an event");
    var event = client.v1().events().inNamespace("default").list().getItems().get(0);
    assertThat(event.getReason()).isEqualTo("FilteringFailed");
    assertThat(event.getMessage()).startsWith("0/3 nodes fit: 2 nodes CardInsufficientMemory(worker1,worker2); 1 nodes node unregistered(ghost)");
    // No card can take 50000 MiB of its 40960: there is no nearest fix to offer.
    assertThat(event.getMessage()).doesNotContain("Nearest");
  }

  /**
   * A placed pod's answer names its node alone, as HAMi's does: kube-scheduler reads FailedNodes only
   * when no node is left, so the nodes that do not fit are counted in the Event, not listed.
   */
  @Test
  void aPlacedPodIsAnsweredWithItsNodeAloneAndTheOthersCountedInTheEvent() throws Exception {
    Pod pod = cluster.create(gpuPod("default", "placed", Map.of("nvidia.com/gpu", "2", "nvidia.com/gpumem", "1000"), Map.of()));
    ObjectNode args = PodJson.mapper().createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    args.putNull("Nodes");
    args.putArray("NodeNames").add("ghost").add("worker1");
    assertThat(cluster.post("/filter", args.toString()).body())
        .isEqualTo("{\"Nodes\":null,\"NodeNames\":[\"worker1\"],\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":\"\"}");
    ClusterHarness.await(() -> client.v1().events().inNamespace("default").list().getItems().stream().anyMatch(e -> "FilteringSucceed".equals(e.getReason())), "an event");
    var event = client.v1().events().inNamespace("default").list().getItems().stream().filter(e -> "FilteringSucceed".equals(e.getReason())).findFirst().orElseThrow();
    assertThat(event.getMessage()).startsWith("find fit node(worker1), 1 nodes not fit, 1 nodes fit(worker1:");
  }

  @Test
  void filterWithoutGpusPassesTheCandidatesThrough() throws Exception {
    Pod plain = cluster.create(gpuPod("default", "plain", Map.of(), Map.of()));
    JsonNode result = cluster.filter(plain, List.of("worker1", "worker2"));
    assertThat(result.path("NodeNames").toString()).isEqualTo("[\"worker1\",\"worker2\"]");
  }

  @Test
  void bindLocksTheNodeMarksThePodAndPostsTheBinding() throws Exception {
    Pod pod = cluster.create(gpuPod("default", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    cluster.filter(pod, List.of("worker1", "worker2"));
    JsonNode bound = cluster.bind(new PodRef("default", "p1"), "worker1");
    assertThat(bound.toString()).isEqualTo("{\"Error\":\"\"}");
    assertThat(client.nodes().withName("worker1").get().getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK)).endsWith(",default,p1");
    Binding binding = client.bindings().inNamespace("default").withName("p1").get();
    assertThat(binding.getTarget().getName()).isEqualTo("worker1");
    // The mark rides on the Binding, whose annotations the API server merges into the pod as it binds it
    // (the mock only stores it): one write, and no pod marked allocating without being bound.
    assertThat(binding.getMetadata().getAnnotations()).containsEntry(HamiAnnotations.BIND_PHASE, "allocating").containsKey(HamiAnnotations.BIND_TIME);
    assertThat(client.pods().inNamespace("default").withName("p1").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.BIND_PHASE);

    // A second pod on the same node waits for the device plugin to finish the first, then binds.
    Pod second = cluster.create(gpuPod("default", "p2", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    cluster.filter(second, List.of("worker1"));
    CompletableFuture<JsonNode> waiting = bindLater(new PodRef("default", "p2"), "worker1");
    Thread.sleep(300);
    assertThat(waiting).as("the bind waits while p1's handshake holds the lock").isNotDone();
    cluster.completeAllocation(new PodRef("default", "p1"), "worker1");
    assertThat(waiting.get(10, TimeUnit.SECONDS).path("Error").asString()).isEmpty();
    assertThat(client.nodes().withName("worker1").get().getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK)).endsWith(",default,p2");
  }

  @Test
  void aGpuPodThatWasNeverFilteredIsNotBound() throws Exception {
    cluster.create(gpuPod("default", "unfiltered", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    JsonNode refused = cluster.bind(new PodRef("default", "unfiltered"), "worker1");
    assertThat(refused.path("Error").asString()).isEqualTo("pod default/unfiltered asks for GPUs but holds no decision of this scheduler's filter (hami.io/vgpu-node)");
    assertThat(client.bindings().inNamespace("default").withName("unfiltered").get()).isNull();
    assertThat(client.nodes().withName("worker1").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.NODE_LOCK);
    // A pod without GPUs needs no decision: it is bound as it is.
    cluster.create(gpuPod("default", "plain", Map.of(), Map.of()));
    assertThat(cluster.bind(new PodRef("default", "plain"), "worker1").path("Error").asString()).isEmpty();
    assertThat(client.bindings().inNamespace("default").withName("plain").get().getTarget().getName()).isEqualTo("worker1");
  }

  @Test
  void bindsWaitingForOneNodeTakeItsLockInTheOrderTheyCame() throws Exception {
    List<PodRef> pods = new ArrayList<>();
    for (int i = 1; i <= 4; i++) {
      Pod pod = cluster.create(gpuPod("default", "p" + i, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
      cluster.filter(pod, List.of("worker1"));
      pods.add(new PodRef("default", "p" + i));
    }
    assertThat(cluster.bind(pods.get(0), "worker1").path("Error").asString()).isEmpty();
    List<CompletableFuture<JsonNode>> waiting = new ArrayList<>();
    for (PodRef pod : pods.subList(1, 4)) {
      waiting.add(bindLater(pod, "worker1"));
      Thread.sleep(300);
    }
    for (int i = 1; i < 4; i++) {
      cluster.completeAllocation(pods.get(i - 1), "worker1");
      assertThat(waiting.get(i - 1).get(10, TimeUnit.SECONDS).path("Error").asString()).isEmpty();
      assertThat(client.nodes().withName("worker1").get().getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK)).endsWith(",default,p" + (i + 1));
      for (CompletableFuture<JsonNode> later : waiting.subList(i, 3)) {
        assertThat(later).as("a later bind still waits").isNotDone();
      }
    }
  }

  @Test
  void anExpiredLockIsTakenOverByAWaitingBind() throws Exception {
    Pod p1 = cluster.create(gpuPod("default", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    Pod p2 = cluster.create(gpuPod("default", "p2", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    cluster.filter(p1, List.of("worker1"));
    cluster.filter(p2, List.of("worker1"));
    assertThat(cluster.bind(new PodRef("default", "p1"), "worker1").path("Error").asString()).isEmpty();
    CompletableFuture<JsonNode> waiting = bindLater(new PodRef("default", "p2"), "worker1");
    Thread.sleep(300);
    assertThat(waiting).isNotDone();
    cluster.clock.advance(java.time.Duration.ofMinutes(5).plusSeconds(1));
    assertThat(waiting.get(10, TimeUnit.SECONDS).path("Error").asString()).isEmpty();
  }

  @Test
  void withoutAWaitAContendedBindFailsAtOnceAsInHami() throws Exception {
    cluster.stop();
    cluster.start(SchedulerOptions.defaults().withNodeLockRetryTimeout(java.time.Duration.ZERO), io.vgpu.k8s.config.DeviceConfig.DEFAULT);
    Pod p1 = cluster.create(gpuPod("default", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    Pod p2 = cluster.create(gpuPod("default", "p2", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    cluster.filter(p1, List.of("worker1"));
    cluster.filter(p2, List.of("worker1"));
    assertThat(cluster.bind(new PodRef("default", "p1"), "worker1").path("Error").asString()).isEmpty();
    assertThat(cluster.bind(new PodRef("default", "p2"), "worker1").path("Error").asString()).isEqualTo("node worker1 has been locked within 5m0s: node lock contention");
    cluster.completeAllocation(new PodRef("default", "p1"), "worker1");
    assertThat(cluster.bind(new PodRef("default", "p2"), "worker1").path("Error").asString()).isEmpty();
  }

  private CompletableFuture<JsonNode> bindLater(PodRef pod, String node) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return cluster.bind(pod, node);
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    }, runnable -> new Thread(runnable, "test-bind-" + pod.name()).start());
  }

  @Test
  void aNamespaceQuotaBlocksAndFrees() throws Exception {
    cluster.quota("team-a", new QuotaLimits(20000, QuotaLimits.UNLIMITED));
    ClusterHarness.await(() -> cluster.server.engine().quota("team-a").limits().memoryMiB() == 20000, "the quota");
    Pod holder = cluster.create(gpuPod("team-a", "holder", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "15000"), Map.of()));
    assertThat(cluster.schedule(holder, List.of("worker1", "worker2"))).isPresent();
    Pod pct = cluster.create(gpuPod("team-a", "pct", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "25"), Map.of()));
    JsonNode blocked = cluster.filter(pct, List.of("worker1", "worker2"));
    assertThat(blocked.path("FailedNodes").path("worker1").asString()).isEqualTo("2/2 ResourceQuotaNotFit");
    cluster.delete(new PodRef("team-a", "holder"));
    assertThat(cluster.schedule(pct, List.of("worker1", "worker2"))).contains("worker1");
  }

  @Test
  void malformedOrOversizedBodiesAreOneLine400s() throws Exception {
    var malformed = cluster.post("/filter", "{not json");
    assertThat(malformed.statusCode()).isEqualTo(400);
    assertThat(malformed.body()).startsWith("malformed ExtenderArgs JSON: ").doesNotContain("\n\t").endsWith("\n");
    assertThat(malformed.body().lines().count()).isEqualTo(1);
    var empty = cluster.post("/bind", "");
    assertThat(empty.statusCode()).isEqualTo(400);
    var huge = cluster.post("/filter", "{\"Pod\":\"" + "x".repeat(1 << 20) + "\"}");
    assertThat(huge.statusCode()).isEqualTo(400);
    assertThat(cluster.post("/filter", "{}").body()).isEqualTo("{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":null,\"FailedAndUnresolvableNodes\":null,\"Error\":\"extender args missing pod\"}");
  }

  @Test
  void healthAndReadinessAreOnTheMetricsListener() throws Exception {
    assertThat(cluster.probe("/healthz").statusCode()).isEqualTo(200);
    assertThat(cluster.probe("/readyz").statusCode()).isEqualTo(200);
    assertThat(cluster.post("/healthz", "").statusCode()).as("not on the extender's listener").isEqualTo(404);
  }

  @Test
  void aDryRunWithNodeObjectsChangesNothing() throws Exception {
    Pod pod = cluster.create(gpuPod("default", "dry", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    var args = ClusterHarness.JSON.createObjectNode();
    args.set("Pod", io.vgpu.k8s.pod.PodJson.toTree(pod));
    var items = args.putObject("Nodes").putArray("items");
    items.add(ClusterHarness.JSON.valueToTree(client.nodes().withName("worker2").get()));
    args.putNull("NodeNames");
    JsonNode result = ClusterHarness.JSON.readTree(cluster.post("/filter", args.toString()).body());
    assertThat(result.path("Nodes").path("items").get(0).path("metadata").path("name").asString()).isEqualTo("worker2");
    assertThat(cluster.server.engine().grant(new PodRef("default", "dry"))).isEmpty();
    assertThat(client.pods().inNamespace("default").withName("dry").get().getMetadata().getAnnotations()).doesNotContainKey(HamiAnnotations.ASSIGNED_NODE);
  }

  @Test
  void metricsCarryHamisNamesAndLabels() throws Exception {
    Pod pod = cluster.create(gpuPod("default", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096", "nvidia.com/gpucores", "25"), Map.of()));
    cluster.filter(pod, List.of("worker1"));
    var response = cluster.http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + cluster.server.metricsPort() + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(response.body())
        .contains("hami_gpu_memory_allocated_bytes{device_cores=\"100\",device_index=\"0\",device_type=\"NVIDIA A100-SXM4-40GB\",device_uuid=\"" + W1 + "00\",node=\"worker1\",zone=\"vGPU\"} 4.294967296E9")
        .contains("hami_vgpu_core_allocated_ratio{container_index=\"0\",device_uuid=\"" + W1 + "00\",namespace=\"default\",node=\"worker1\",pod=\"p1\",zone=\"vGPU\"} 25.0")
        .contains("hami_gpu_shared_count{")
        .contains("vgpu_filter_duration_seconds_bucket")
        .contains("hami_build_info{");
  }

  private String metrics() throws Exception {
    return cluster.http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + cluster.server.metricsPort() + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString()).body();
  }

  @Test
  void aPodDeletedWhilePendingIsNoLongerCountedUnschedulable() throws Exception {
    Pod big = cluster.create(gpuPod("default", "big", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "50000"), Map.of()));
    cluster.filter(big, List.of("worker1", "worker2"));
    assertThat(metrics()).contains("vgpu_unschedulable_pods{reason=\"CardInsufficientMemory\"} 1.0");
    client.pods().inNamespace("default").withName("big").delete();
    ClusterHarness.await(() -> {
      try {
        return !metrics().contains("vgpu_unschedulable_pods{");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }, "the deleted pod to leave vgpu_unschedulable_pods");
  }

  @Test
  void theWebhookDeniesAGpuPodThatNamesAnotherSchedulerAndANodeWithAnEvent() throws Exception {
    Pod bypass = gpuPod("tenant", "bypass", Map.of("nvidia.com/gpu", "1"), Map.of());
    bypass.getSpec().setSchedulerName("my-scheduler");
    bypass.getSpec().setNodeName("worker1");
    ClusterHarness.Admission denied = cluster.admit(bypass, "admission.k8s.io/v1");
    assertThat(denied.pod()).isEmpty();
    assertThat(denied.message()).isEqualTo("pod has node assigned (spec.nodeName: worker1)");
    ClusterHarness.await(() -> !client.v1().events().inNamespace("tenant").list().getItems().isEmpty(), "an event");
    var event = client.v1().events().inNamespace("tenant").list().getItems().get(0);
    assertThat(event.getReason()).isEqualTo("AdmissionDenied");
    assertThat(event.getInvolvedObject().getName()).isEqualTo("bypass");
    assertThat(event.getMessage()).isEqualTo("pod has node assigned (spec.nodeName: worker1)");
  }
}
