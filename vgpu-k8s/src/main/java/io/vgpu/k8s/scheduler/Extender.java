package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.Explanation;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.NodeRejection;
import io.vgpu.core.Placement;
import io.vgpu.core.ReserveResult;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.codec.ReasonCodec;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingResult;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderFilterResult;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The scheduler extender's two verbs with HAMi's semantics.
 *
 * <p><b>Filter</b> in node-cache mode picks exactly one node, writes the decision into the pod's
 * annotations at once and reserves the usage in the ledger, so the next filter already sees it; if the
 * annotation write fails the reservation is rolled back. With node objects (cluster-autoscaler's dry
 * run) it evaluates a throw-away copy and changes nothing. Failures name, per node, HAMi's reasons, and
 * a {@code FilteringFailed} event says what would make the pod fit.
 *
 * <p><b>Bind</b> takes the node's lock, marks the pod {@code allocating} and posts the Binding; the
 * device plugin finishes the handshake when kubelet allocates the containers.
 */
public final class Extender {
  /** Pods of a PodGroup retry a contended node lock instead of failing at once. */
  static final String POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group";

  private static final Logger LOG = LoggerFactory.getLogger(Extender.class);
  private static final int RESERVE_ATTEMPTS = 3;

  private final KubernetesClient client;
  private final Engine engine;
  private final Supplier<Engine.Builder> engines;
  private final ClusterLedger ledger;
  private final Leadership leadership;
  private final PodRequestParser requests;
  private final NodeLock locks;
  private final EventRecorder events;
  private final SchedulerMetrics metrics;
  private final Clock clock;
  private final Duration syncWait;
  private final Duration lockRetryTimeout;

  /**
   * Wires the extender.
   *
   * @param engines builds a throw-away engine with the same configuration, for dry runs
   * @param syncWait how long a filter waits for the ledger's first sync before answering with an error
   * @param lockRetryTimeout how long a PodGroup member retries a contended node lock
   */
  public Extender(
      KubernetesClient client,
      Engine engine,
      Supplier<Engine.Builder> engines,
      ClusterLedger ledger,
      Leadership leadership,
      PodRequestParser requests,
      NodeLock locks,
      EventRecorder events,
      SchedulerMetrics metrics,
      Clock clock,
      Duration syncWait,
      Duration lockRetryTimeout) {
    this.client = client;
    this.engine = engine;
    this.engines = engines;
    this.ledger = ledger;
    this.leadership = leadership;
    this.requests = requests;
    this.locks = locks;
    this.events = events;
    this.metrics = metrics;
    this.clock = clock;
    this.syncWait = syncWait;
    this.lockRetryTimeout = lockRetryTimeout;
  }

  // ---------------------------------------------------------------------------------------------
  // Filter

  /** Answers one filter call. */
  public ExtenderFilterResult filter(ExtenderArgs args) {
    long start = System.nanoTime();
    ExtenderFilterResult result = doFilter(args);
    metrics.filtered(System.nanoTime() - start, result.error().isEmpty() && (result.nodeNames() != null || result.nodes() != null));
    return result;
  }

  private ExtenderFilterResult doFilter(ExtenderArgs args) {
    Pod pod = args.pod();
    if (pod == null || pod.getMetadata() == null) {
      return ExtenderFilterResult.error("extender args missing pod");
    }
    PodRequest request;
    try {
      request = requests.parse(pod);
    } catch (PodRequestException e) {
      return ExtenderFilterResult.error(e.getMessage());
    }
    if (!request.wantsDevices()) {
      return new ExtenderFilterResult(args.nodes(), args.nodeNames(), null, null, "");
    }
    CompiledRequest compiled;
    try {
      compiled = engine.compile(request);
    } catch (IllegalArgumentException e) {
      return ExtenderFilterResult.error(e.getMessage());
    }
    if (args.nodes() != null) {
      return dryRun(args.nodes(), request);
    }
    if (!awaitSync()) {
      return ExtenderFilterResult.error("scheduler state is not synced yet");
    }
    if (!leadership.isLeader()) {
      return ExtenderFilterResult.error("this scheduler instance is not the leader");
    }
    List<String> candidates = args.nodeNames() == null ? List.of() : args.nodeNames();
    PodRef ref = request.pod();
    // A pod filtered again (a failed or retried bind) gives back what it held first, as in HAMi.
    engine.release(ref);
    for (int attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      FilterResult result = engine.filter(compiled, candidates, true);
      Map<String, String> failed = failedNodes(result.rejections());
      if (result.placement().isEmpty()) {
        reportUnschedulable(pod, ref, compiled, candidates, result.rejections());
        return new ExtenderFilterResult(null, null, failed, null, "");
      }
      Placement placement = result.placement().get();
      ReserveResult reserved = engine.reserve(placement);
      if (reserved.status() == ReserveResult.Status.CONFLICT) {
        LOG.debug("pod {}: lost node {} to a concurrent reservation ({}); filtering again", ref, placement.node(), reserved.message());
        continue;
      }
      if (!reserved.reserved()) {
        return ExtenderFilterResult.error(reserved.message());
      }
      ledger.reservedByFilter(ref);
      try {
        annotate(pod, placement.grant());
      } catch (KubernetesClientException e) {
        engine.release(ref);
        events.warning(pod, "FilteringFailed", "writing the scheduling decision failed: " + e.getMessage());
        return ExtenderFilterResult.error("pod " + ref + ": writing the scheduling decision failed: " + e.getMessage());
      }
      metrics.schedulable(ref);
      events.normal(pod, "FilteringSucceed", successMessage(candidates.size(), placement.node(), result.fitting()));
      return new ExtenderFilterResult(null, List.of(placement.node()), failed.isEmpty() ? null : failed, null, "");
    }
    return ExtenderFilterResult.error("pod " + ref + ": every fitting node was taken by concurrent reservations; retry");
  }

  private boolean awaitSync() {
    long deadline = System.nanoTime() + syncWait.toNanos();
    while (!ledger.synced()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  /** The decision HAMi writes into the pod during filter. */
  static Map<String, String> annotations(PodGrant grant, String assignedTime) {
    String devices = DeviceListCodec.encode(grant);
    Map<String, String> out = new LinkedHashMap<>();
    out.put(HamiAnnotations.ASSIGNED_NODE, grant.node());
    out.put(HamiAnnotations.ASSIGNED_TIME, assignedTime);
    out.put(HamiAnnotations.DEVICES_TO_ALLOCATE, devices);
    out.put(HamiAnnotations.DEVICES_ALLOCATED, devices);
    return out;
  }

  private void annotate(Pod pod, PodGrant grant) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode metadata = patch.putObject("metadata");
    ObjectNode annotations = metadata.putObject("annotations");
    annotations(grant, Long.toString(clock.instant().getEpochSecond())).forEach(annotations::put);
    metadata.putObject("labels").put(HamiAnnotations.ASSIGNED_NODE, grant.node());
    client.pods().inNamespace(grant.pod().namespace()).withName(grant.pod().name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
  }

  private static Map<String, String> failedNodes(List<NodeRejection> rejections) {
    Map<String, String> failed = new LinkedHashMap<>();
    for (NodeRejection r : rejections) {
      failed.put(r.node(), ReasonCodec.render(r));
    }
    return failed;
  }

  /** HAMi's success message: {@code find fit node(n), k nodes not fit, j nodes fit(n1:score,...)}. */
  private static String successMessage(int candidates, String node, List<FilterResult.NodeScore> fitting) {
    String scores = fitting.stream().map(s -> s.node() + ":" + String.format("%.2f", Math.abs(s.score()))).collect(Collectors.joining(","));
    return "find fit node(" + node + "), " + (candidates - fitting.size()) + " nodes not fit, " + fitting.size() + " nodes fit(" + scores + ")";
  }

  /**
   * Records why the pod fits nowhere: HAMi's per-reason summary and, what HAMi cannot say, the
   * cheapest change that would make it fit.
   */
  private void reportUnschedulable(Pod pod, PodRef ref, CompiledRequest compiled, List<String> candidates, List<NodeRejection> rejections) {
    Map<String, List<String>> nodesByReason = new TreeMap<>();
    Map<String, Integer> weight = new LinkedHashMap<>();
    for (NodeRejection r : rejections) {
      for (String reason : reasonWords(r)) {
        nodesByReason.computeIfAbsent(reason, k -> new ArrayList<>()).add(r.node());
        weight.merge(reason, 1, Integer::sum);
      }
    }
    StringBuilder message = new StringBuilder();
    message.append("0/").append(candidates.size()).append(" nodes fit: ");
    message.append(nodesByReason.entrySet().stream()
        .map(e -> e.getValue().size() + " nodes " + e.getKey() + "(" + String.join(",", e.getValue().stream().sorted().toList()) + ")")
        .collect(Collectors.joining("; ")));
    Explanation explanation = engine.explain(compiled, candidates);
    explanation.nearest().ifPresent(fix -> message.append(". Nearest fit: node ").append(fix.node()).append(": ").append(fix.change()));
    events.warning(pod, "FilteringFailed", message.toString());
    String dominant = weight.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("NoNodes");
    metrics.unschedulable(ref, dominant);
  }

  private static List<String> reasonWords(NodeRejection r) {
    return switch (r.kind()) {
      case UNREGISTERED -> List.of(ReasonCodec.NODE_UNREGISTERED);
      case INSUFFICIENT_DEVICES -> List.of(ReasonCodec.NODE_INSUFFICIENT_DEVICE);
      case DEVICES -> r.counts().keySet().stream().map(reason -> reason.word()).toList();
    };
  }

  /**
   * cluster-autoscaler's dry run: the candidate nodes as objects, possibly nodes that do not exist yet.
   * Evaluated on a throw-away engine holding those nodes and the grants the ledger holds on them.
   */
  private ExtenderFilterResult dryRun(NodeList nodes, PodRequest request) {
    Engine scratch = engines.get().build();
    List<String> candidates = new ArrayList<>();
    Map<String, String> failed = new LinkedHashMap<>();
    Set<String> names = new HashSet<>();
    for (Node node : nodes.getItems()) {
      String name = node.getMetadata().getName();
      candidates.add(name);
      String register = node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
      if (register == null) {
        continue;
      }
      try {
        scratch.upsertNode(new NodeDevices(name, NodeRegisterCodec.decode(register), Set.of()));
        names.add(name);
      } catch (IllegalArgumentException e) {
        failed.put(name, "unreadable " + HamiAnnotations.NODE_REGISTER + ": " + e.getMessage());
      }
    }
    for (PodGrant grant : engine.grants()) {
      if (names.contains(grant.node()) && !grant.pod().equals(request.pod())) {
        scratch.restore(grant);
      }
    }
    FilterResult result = scratch.filter(scratch.compile(request), candidates, true);
    failed.putAll(failedNodes(result.rejections()));
    Optional<Placement> placement = result.placement();
    if (placement.isEmpty()) {
      return new ExtenderFilterResult(null, null, failed, null, "");
    }
    NodeList chosen = new NodeList();
    nodes.getItems().stream().filter(n -> n.getMetadata().getName().equals(placement.get().node())).findFirst().ifPresent(n -> chosen.getItems().add(n));
    return new ExtenderFilterResult(chosen, null, failed.isEmpty() ? null : failed, null, "");
  }

  // ---------------------------------------------------------------------------------------------
  // Bind

  /** Answers one bind call. */
  public ExtenderBindingResult bind(ExtenderBindingArgs args) {
    long start = System.nanoTime();
    ExtenderBindingResult result = doBind(args);
    metrics.bound(System.nanoTime() - start, result.error().isEmpty());
    return result;
  }

  private ExtenderBindingResult doBind(ExtenderBindingArgs args) {
    if (args.podName() == null || args.podNamespace() == null || args.node() == null) {
      return new ExtenderBindingResult("bind args need PodName, PodNamespace and Node");
    }
    if (!leadership.isLeader()) {
      return new ExtenderBindingResult("this scheduler instance is not the leader");
    }
    PodRef ref = new PodRef(args.podNamespace(), args.podName());
    String nodeName = args.node();
    Pod pod;
    try {
      pod = client.pods().inNamespace(ref.namespace()).withName(ref.name()).get();
    } catch (KubernetesClientException e) {
      return new ExtenderBindingResult("get pod " + ref + ": " + e.getMessage());
    }
    if (pod == null) {
      engine.release(ref);
      return new ExtenderBindingResult("pod " + ref + " not found");
    }
    Node node = client.nodes().withName(nodeName).get();
    if (node == null) {
      engine.release(ref);
      events.warning(pod, "BindingFailed", "node " + nodeName + " not found");
      return new ExtenderBindingResult("node " + nodeName + " not found");
    }
    String held = Optional.ofNullable(PodRefs.annotations(pod).get(HamiAnnotations.ASSIGNED_NODE)).orElse("");
    if (!held.isEmpty() && !held.equals(nodeName)) {
      events.warning(pod, "BindingFailed", "pod was filtered to node " + held + ", not " + nodeName);
      return new ExtenderBindingResult("pod " + ref + " was filtered to node " + held + ", not " + nodeName);
    }
    boolean usesDevices = !held.isEmpty();
    try {
      if (usesDevices) {
        lock(pod, ref, nodeName);
      }
      try {
        if (usesDevices) {
          ObjectNode patch = PodJson.mapper().createObjectNode();
          ObjectNode annotations = patch.putObject("metadata").putObject("annotations");
          annotations.put(HamiAnnotations.BIND_PHASE, "allocating");
          annotations.put(HamiAnnotations.BIND_TIME, Long.toString(clock.instant().getEpochSecond()));
          client.pods().inNamespace(ref.namespace()).withName(ref.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
        }
        Binding binding =
            new BindingBuilder()
                .withNewMetadata().withName(ref.name()).withNamespace(ref.namespace()).withUid(args.podUid()).endMetadata()
                .withNewTarget().withApiVersion("v1").withKind("Node").withName(nodeName).endTarget()
                .build();
        client.bindings().inNamespace(ref.namespace()).resource(binding).create();
      } catch (KubernetesClientException e) {
        if (usesDevices) {
          locks.release(nodeName, ref, false);
        }
        throw e;
      }
    } catch (NodeLock.ContentionException | KubernetesClientException e) {
      events.warning(pod, "BindingFailed", e.getMessage());
      return new ExtenderBindingResult(e.getMessage());
    }
    events.normal(pod, "BindingSucceed", "bound to " + nodeName);
    return ExtenderBindingResult.OK;
  }

  private void lock(Pod pod, PodRef ref, String nodeName) throws NodeLock.ContentionException {
    boolean groupMember = pod.getMetadata().getLabels() != null && pod.getMetadata().getLabels().containsKey(POD_GROUP_LABEL);
    long deadline = System.nanoTime() + lockRetryTimeout.toNanos();
    while (true) {
      try {
        locks.acquire(nodeName, ref);
        return;
      } catch (NodeLock.ContentionException e) {
        if (!groupMember || System.nanoTime() > deadline) {
          throw e;
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
  }
}
