package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.api.Device;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRequest;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.CandidateNodes;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.Placement;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingResult;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderFilterResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The scheduler's request path run on made-up pods and nodes before it serves, so that the JIT has
 * compiled it when the first pods arrive: a cold JVM spends about half of its CPU in a first burst
 * compiling, and interprets the rest meanwhile.
 *
 * <p>Each round reads a filter request as kube-scheduler sends it (with the reader the extender uses),
 * parses and compiles the pod's request, filters, reserves and releases on a private engine of a few
 * nodes, writes the decision patch and the answer, reads a bind request, writes the Binding, and decodes
 * a pod and a node watch event as the informers do. Nothing of the scheduler's state is touched: the
 * engine, the readers and the ledger-shaped decoder are this object's own. With a client, one round in
 * ten also reads {@code /version} from the API server through the client's HTTP client, the one the
 * scheduler's writes use: a read that any client may make and that changes nothing.
 */
final class WarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);
  private static final int NODES = 16;
  private static final int CARDS_PER_NODE = 8;
  private static final long CARD_MEMORY_MIB = 81_920;
  private static final int ROUNDS_PER_API_READ = 10;
  private static final Duration API_READ_TIMEOUT = Duration.ofSeconds(5);

  /**
   * What a warm-up did.
   *
   * @param rounds rounds run through the request path
   * @param placed rounds whose pod was placed, reserved, bound and given back (every one, unless the
   *     device configuration leaves made-up A100s unusable)
   * @param apiReads reads of {@code /version} answered (any status)
   * @param took how long it ran
   */
  record Outcome(int rounds, int placed, int apiReads, Duration took) {}

  private final JsonMapper json;
  private final ResourceSchema schema;
  private final Engine engine;
  private final PodRequestParser requests;
  private final ExtenderArgsReader filterArgs;
  private final KubernetesSerialization watchEvents;
  private final List<String> nodeNames = new ArrayList<>();
  private final List<String> nodeEvents = new ArrayList<>();
  private final @Nullable KubernetesClient client;
  private @Nullable CandidateNodes lastCandidates;

  /**
   * A warm-up of the request path under {@code config}; {@code client}, if any, is the scheduler's.
   *
   * @param json the mapper the extender reads and answers with
   */
  WarmUp(DeviceConfig config, JsonMapper json, @Nullable KubernetesClient client) {
    this.json = json;
    this.schema = config.schema();
    this.client = client;
    this.engine = Engine.builder().config(config.engineConfig()).build();
    this.requests = new PodRequestParser(schema);
    this.filterArgs = new ExtenderArgsReader(json);
    this.watchEvents = LeanDecoding.serialization(LeanReader.forCache(LeanStore.podResources(schema), (key, annotation, length) -> {}));
    DeviceRegistrar registrar = new DeviceRegistrar(schema.vendor());
    for (int n = 0; n < NODES; n++) {
      String name = String.format(Locale.ROOT, "warm-up-node-%02d", n);
      List<Device> cards = new ArrayList<>();
      for (int c = 0; c < CARDS_PER_NODE; c++) {
        cards.add(new Device(String.format(Locale.ROOT, "GPU-%08x-0000-4000-8000-%012x", n, c), c, "NVIDIA A100-SXM4-80GB", CARD_MEMORY_MIB, c / 4, true,
            String.format(Locale.ROOT, "00000000:%02X:00.0", 0x07 + c * 8)));
      }
      List<SchedulableDevice> registered = registrar.register(cards, config.sharing());
      engine.upsertNode(new NodeDevices(name, registered, Set.of()));
      nodeNames.add(name);
      nodeEvents.add(nodeEvent(name, NodeRegisterCodec.encode(registered), n));
    }
  }

  /**
   * Runs up to {@code rounds} rounds, stopping early once {@code budget} has passed or the API server
   * cannot be read (the rounds go on without it).
   */
  Outcome run(int rounds, Duration budget) {
    long start = System.nanoTime();
    long deadline = start + budget.toNanos();
    int done = 0;
    int placed = 0;
    int reads = 0;
    boolean reading = client != null;
    for (; done < rounds && System.nanoTime() - deadline < 0; done++) {
      placed += round(done) ? 1 : 0;
      if (reading && done % ROUNDS_PER_API_READ == 0) {
        reading = readVersion();
        reads += reading ? 1 : 0;
      }
    }
    Outcome outcome = new Outcome(done, placed, reads, Duration.ofNanos(System.nanoTime() - start));
    LOG.info("warmed up the request path: {} rounds ({} placed), {} API reads in {} ms", outcome.rounds(), outcome.placed(), outcome.apiReads(), outcome.took().toMillis());
    return outcome;
  }

  /**
   * One pod through filter, bind and the informers' decoding; its reservation is given back.
   *
   * @return whether the pod was placed
   */
  private boolean round(int i) {
    String name = "warm-up-" + i;
    String uid = String.format(Locale.ROOT, "00000000-0000-4000-8000-%012x", i);
    ObjectNode pod = pod(name, uid, 1 + i % 2, 1024L * (1 + i % 16), 5 * (i % 11));
    ExtenderArgs args = filterArgs.read(filterRequest(pod));
    if (args.pod() == null) {
      throw new IllegalStateException("the warm-up's filter request lost its pod");
    }
    PodRequest request = requests.parse(args.pod());
    CompiledRequest compiled = engine.compile(request);
    CandidateNodes candidates = engine.candidates(args.nodeNames() == null ? List.of() : args.nodeNames(), lastCandidates);
    lastCandidates = candidates;
    FilterResult result = engine.filterResolved(compiled, candidates, 20);
    ExtenderFilterResult answer;
    boolean placed = false;
    if (result.placement().isPresent()) {
      Placement placement = result.placement().get();
      PodGrant grant = placement.grant();
      if (engine.reserve(placement).reserved()) {
        String assigned = Long.toString(1_700_000_000L + i);
        Extender.decisionPatch(grant, assigned, null, uid);
        Map<String, String> annotations = Extender.annotations(grant, assigned, null, uid);
        Extender.successMessage(nodeNames.size(), placement.node(), result.fitting(), result.fittingCount());
        ExtenderBindingArgs bind = json.readValue(bindRequest(name, uid, placement.node()), ExtenderBindingArgs.class);
        Extender.bindingJson(request.pod(), bind.podUid(), bind.node() == null ? placement.node() : bind.node(), Map.of(HamiAnnotations.BIND_PHASE, "allocating"));
        json.writeValueAsBytes(ExtenderBindingResult.OK);
        ObjectNode bound = pod.deepCopy();
        annotations.forEach(((ObjectNode) bound.get("metadata").get("annotations"))::put);
        ((ObjectNode) bound.get("spec")).put("nodeName", placement.node());
        watchEvents.unmarshal(watchEvent("MODIFIED", bound), WatchEvent.class);
        engine.release(request.pod());
        placed = true;
      }
      answer = new ExtenderFilterResult(null, List.of(placement.node()), null, null, "");
    } else {
      answer = new ExtenderFilterResult(null, null, Map.of(), null, "");
    }
    json.writeValueAsBytes(answer);
    watchEvents.unmarshal(nodeEvents.get(i % nodeEvents.size()), WatchEvent.class);
    return placed;
  }

  /** A read of the API server's {@code /version}; false when it could not be made. */
  private boolean readVersion() {
    KubernetesClient c = client;
    if (c == null) {
      return false;
    }
    try {
      HttpClient http = c.getHttpClient();
      String master = c.getMasterUrl().toString();
      HttpRequest request = http.newHttpRequestBuilder().uri((master.endsWith("/") ? master : master + "/") + "version").build();
      http.sendAsync(request, byte[].class).get(API_READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      LOG.debug("warm-up: reading /version failed, going on without the API server: {}", e.toString());
      return false;
    }
  }

  private ObjectNode pod(String name, String uid, int cards, long memoryMiB, int cores) {
    ObjectNode pod = json.createObjectNode();
    pod.put("apiVersion", "v1");
    pod.put("kind", "Pod");
    ObjectNode metadata = pod.putObject("metadata");
    metadata.put("name", name);
    metadata.put("namespace", "warm-up");
    metadata.put("uid", uid);
    metadata.put("resourceVersion", "1");
    metadata.putObject("labels").put("app", "warm-up");
    metadata.putObject("annotations");
    ObjectNode spec = pod.putObject("spec");
    spec.put("schedulerName", "hami-scheduler");
    ObjectNode container = spec.putArray("containers").addObject();
    container.put("name", "main");
    container.put("image", "warm-up");
    ObjectNode limits = container.putObject("resources").putObject("limits");
    limits.put("cpu", "1");
    limits.put(schema.countResource(), Integer.toString(cards));
    if (!schema.memoryResource().isEmpty()) {
      limits.put(schema.memoryResource(), Long.toString(memoryMiB));
    }
    if (!schema.coresResource().isEmpty() && cores > 0) {
      limits.put(schema.coresResource(), Integer.toString(cores));
    }
    pod.putObject("status").put("phase", "Pending");
    return pod;
  }

  private byte[] filterRequest(ObjectNode pod) {
    ObjectNode args = json.createObjectNode();
    args.set("Pod", pod);
    args.putNull("Nodes");
    ArrayNode names = args.putArray("NodeNames");
    nodeNames.forEach(names::add);
    return json.writeValueAsBytes(args);
  }

  private byte[] bindRequest(String name, String uid, String node) {
    ObjectNode args = json.createObjectNode();
    args.put("PodName", name);
    args.put("PodNamespace", "warm-up");
    args.put("PodUID", uid);
    args.put("Node", node);
    return json.writeValueAsBytes(args);
  }

  private String watchEvent(String type, ObjectNode object) {
    ObjectNode event = json.createObjectNode();
    event.put("type", type);
    event.set("object", object);
    return json.writeValueAsString(event);
  }

  private String nodeEvent(String name, String register, int n) {
    ObjectNode node = json.createObjectNode();
    node.put("apiVersion", "v1");
    node.put("kind", "Node");
    ObjectNode metadata = node.putObject("metadata");
    metadata.put("name", name);
    metadata.put("resourceVersion", Integer.toString(n + 1));
    metadata.putObject("labels").put("kubernetes.io/hostname", name);
    ObjectNode annotations = metadata.putObject("annotations");
    annotations.put(HamiAnnotations.NODE_REGISTER, register);
    annotations.put(NodeHealth.HANDSHAKE, "Requesting_2026.01.01 00:00:00");
    ObjectNode status = node.putObject("status");
    for (String section : List.of("capacity", "allocatable")) {
      ObjectNode resources = status.putObject(section);
      resources.put("cpu", "96");
      resources.put("memory", "1376Gi");
      resources.put("pods", "110");
      resources.put(schema.countResource(), Integer.toString(CARDS_PER_NODE * 10));
    }
    return watchEvent("MODIFIED", node);
  }
}
