package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Plays kube-scheduler, kubelet and the device plugin around a real {@link SchedulerServer} on a
 * fabric8 CRUD mock API server, over real HTTP. It emulates the few things the mock lacks (the
 * Binding subresource does not set {@code spec.nodeName}) in the harness, never in production code.
 */
final class ClusterHarness implements AutoCloseable {
  static final JsonMapper JSON = PodJson.mapper();

  final KubernetesClient client;
  final MutableClock clock = new MutableClock();
  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  SchedulerServer server;

  ClusterHarness(KubernetesClient client) {
    this.client = client;
  }

  SchedulerServer start(SchedulerOptions options, DeviceConfig config) throws IOException {
    return start(options, config, client);
  }

  /** Starts the scheduler with a client of its own; the harness plays the other parts with {@link #client}. */
  SchedulerServer start(SchedulerOptions options, DeviceConfig config, KubernetesClient schedulerClient) throws IOException {
    server = SchedulerServer.start(options.withBinds("127.0.0.1:0", "127.0.0.1:0"), config, schedulerClient, clock);
    return server;
  }

  SchedulerServer start() throws IOException {
    return start(SchedulerOptions.defaults(), DeviceConfig.DEFAULT);
  }

  /** Stops the scheduler (as a crash or rollout would). */
  void stop() {
    if (server != null) {
      server.close();
      server = null;
    }
  }

  @Override
  public void close() {
    stop();
  }

  // --- Cluster objects

  Node node(String name, Map<String, String> labels, Map<String, String> annotations, List<SchedulableDevice> devices) {
    Map<String, String> all = new HashMap<>(annotations);
    all.put(HamiAnnotations.NODE_REGISTER, NodeRegisterCodec.encode(devices));
    int slots = devices.stream().mapToInt(SchedulableDevice::splitCount).sum();
    Node node =
        new NodeBuilder()
            .withNewMetadata().withName(name).withLabels(labels).withAnnotations(all).endMetadata()
            .withNewStatus().addToAllocatable("nvidia.com/gpu", new Quantity(Integer.toString(slots))).endStatus()
            .build();
    return client.nodes().resource(node).create();
  }

  static List<SchedulableDevice> cards(String uuidPrefix, int count, int memoryMiB) {
    List<SchedulableDevice> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(new SchedulableDevice(uuidPrefix + String.format("%02d", i), i, "NVIDIA A100-SXM4-40GB", memoryMiB, 100, 10, 0, true, "hami-core"));
    }
    return out;
  }

  void quota(String namespace, QuotaLimits limits) {
    ResourceQuotaBuilder quota = new ResourceQuotaBuilder().withNewMetadata().withName("gpu").withNamespace(namespace).endMetadata().withNewSpec().endSpec();
    Map<String, Quantity> hard = new HashMap<>();
    if (limits.memoryMiB() != QuotaLimits.UNLIMITED) {
      hard.put("limits.nvidia.com/gpumem", new Quantity(Long.toString(limits.memoryMiB())));
    }
    if (limits.cores() != QuotaLimits.UNLIMITED) {
      hard.put("limits.nvidia.com/gpucores", new Quantity(Long.toString(limits.cores())));
    }
    client.resourceQuotas().inNamespace(namespace).resource(quota.editSpec().withHard(hard).endSpec().build()).create();
  }

  // --- The webhook, as the API server calls it

  /** Sends the pod through the webhook; returns the admitted pod, or the denial message. */
  Admission admit(Pod pod, String apiVersion) throws Exception {
    ObjectNode review = JSON.createObjectNode();
    review.put("apiVersion", apiVersion);
    review.put("kind", "AdmissionReview");
    ObjectNode request = review.putObject("request");
    request.put("uid", "uid-" + pod.getMetadata().getName());
    request.put("operation", "CREATE");
    request.put("namespace", pod.getMetadata().getNamespace());
    request.set("object", PodJson.toTree(pod));
    JsonNode response = JSON.readTree(post("/webhook", review.toString()).body()).path("response");
    if (!response.path("allowed").asBoolean()) {
      return new Admission(Optional.empty(), response.path("status").path("message").asString());
    }
    JsonNode mutated = PodJson.toTree(pod);
    if (response.has("patch")) {
      ArrayNode ops = (ArrayNode) JSON.readTree(Base64.getDecoder().decode(response.path("patch").asString()));
      mutated = io.fabric8.zjsonpatch.JsonPatch.apply(ops, mutated);
    }
    return new Admission(Optional.of(PodJson.fromTree(mutated)), "");
  }

  record Admission(Optional<Pod> pod, String message) {}

  Pod create(Pod pod) {
    return client.pods().inNamespace(pod.getMetadata().getNamespace()).resource(pod).create();
  }

  // --- kube-scheduler's calls

  /** Posts to the extender's listener ({@code /filter}, {@code /bind}) or the webhook's. */
  HttpResponse<String> post(String path, String body) throws Exception {
    int port = path.equals("/webhook") ? server.port() : server.extenderPort();
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  /** A GET on the metrics listener, which serves the health probes. */
  HttpResponse<String> probe(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.metricsPort() + path)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * One filter call in node-cache mode for the pod as the API server has it, returning once the
   * decision the filter writes behind its answer is written (or its write failed): the tests look at
   * the pod as its bind would find it.
   */
  JsonNode filter(Pod pod, List<String> nodeNames) throws Exception {
    JsonNode answer = filterAsSent(client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).get(), nodeNames);
    PodRef ref = new PodRef(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    server.extender().decisionWritten(ref).exceptionally(e -> null).get(30, TimeUnit.SECONDS);
    return answer;
  }

  /** One filter call in node-cache mode for {@code pod} as given, answered before its decision is written. */
  JsonNode filterAsSent(Pod pod, List<String> nodeNames) throws Exception {
    ObjectNode args = JSON.createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    args.putNull("Nodes");
    ArrayNode names = args.putArray("NodeNames");
    nodeNames.forEach(names::add);
    return JSON.readTree(post("/filter", args.toString()).body());
  }

  /** One bind call. */
  JsonNode bind(PodRef pod, String node) throws Exception {
    Pod current = client.pods().inNamespace(pod.namespace()).withName(pod.name()).get();
    ObjectNode args = JSON.createObjectNode();
    args.put("PodName", pod.name());
    args.put("PodNamespace", pod.namespace());
    args.put("PodUID", current.getMetadata().getUid() == null ? "" : current.getMetadata().getUid());
    args.put("Node", node);
    return JSON.readTree(post("/bind", args.toString()).body());
  }

  /**
   * Filter, then bind, then what kubelet and the device plugin do: the Binding sets {@code
   * spec.nodeName} (emulated: the mock stores Bindings without applying them), allocation ends with
   * {@code bind-phase=success} and the node lock released. Returns the chosen node, or empty when the
   * pod fits nowhere.
   */
  Optional<String> schedule(Pod pod, List<String> nodeNames) throws Exception {
    JsonNode filtered = filter(pod, nodeNames);
    if (!filtered.path("Error").asString("").isEmpty()) {
      throw new AssertionError("filter error: " + filtered.path("Error").asString());
    }
    JsonNode chosen = filtered.path("NodeNames");
    if (!chosen.isArray() || chosen.isEmpty()) {
      return Optional.empty();
    }
    String node = chosen.get(0).asString();
    PodRef ref = new PodRef(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    JsonNode bound = bind(ref, node);
    if (!bound.path("Error").asString("").isEmpty()) {
      throw new AssertionError("bind error: " + bound.path("Error").asString());
    }
    completeAllocation(ref, node);
    return Optional.of(node);
  }

  void completeAllocation(PodRef ref, String node) {
    ObjectNode patch = JSON.createObjectNode();
    patch.putObject("spec").put("nodeName", node);
    patch.putObject("metadata").putObject("annotations").put(HamiAnnotations.BIND_PHASE, "success");
    client.pods().inNamespace(ref.namespace()).withName(ref.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    new NodeLock(client, Duration.ofMinutes(5), clock).release(node, ref, false);
    // A bind decides on the informer's copy of the node: the release counts once that copy shows it.
    await(() -> !lockedBy(server.ledger().node(node).orElse(null), ref), "the scheduler's informer to see node " + node + "'s lock released by " + ref);
  }

  /** Whether {@code node}'s lock annotation names {@code pod} as its holder. */
  private static boolean lockedBy(@Nullable Node node, PodRef pod) {
    String value = node == null || node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK);
    if (value == null) {
      return false;
    }
    try {
      return NodeLock.ownedBy(NodeLockCodec.decode(value), pod);
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  void delete(PodRef ref) {
    client.pods().inNamespace(ref.namespace()).withName(ref.name()).delete();
    await(() -> server.engine().grant(ref).isEmpty(), "ledger to release " + ref);
  }

  static void await(BooleanSupplier condition, String what) {
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for " + what);
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /** A clock tests move by hand. */
  static final class MutableClock extends Clock {
    private volatile Instant now = Instant.now();

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
