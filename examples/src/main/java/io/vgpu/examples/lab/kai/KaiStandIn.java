package io.vgpu.examples.lab.kai;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.apiserver.EventWriter;
import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * KAI Scheduler's controllers in the lab, each as its own ServiceAccount in {@code kai-scheduler}: the
 * pod-grouper (a PodGroup per pod, its {@code pod-group-name}), the scheduler (queue lookup, whole cards,
 * fractions by KAI's portion and gpupack, a BindRequest per decision) and the binder (a reservation pod
 * per GPU group, waiting for its card's UUID, the capabilities ConfigMaps with the hamicore plugin's
 * limit, the group label, the Binding). One loop reads the API and acts, as KAI's reconcilers do on
 * every change; what it decided lives in the API objects only.
 */
public final class KaiStandIn implements AutoCloseable {
  /** KAI's namespace. */
  public static final String NAMESPACE = "kai-scheduler";
  /** The pod-grouper's identity. */
  public static final UserInfo POD_GROUPER = UserInfo.serviceAccount(NAMESPACE, "pod-grouper");
  /** The scheduler's identity: the only one the chart's policy lets write BindRequests. */
  public static final UserInfo SCHEDULER = UserInfo.serviceAccount(NAMESPACE, "scheduler");
  /** The binder's identity. */
  public static final UserInfo BINDER = UserInfo.serviceAccount(NAMESPACE, "binder");
  /** KAI's {@code --resource-reservation-allocation-timeout} default. */
  public static final Duration RESERVATION_TIMEOUT = Duration.ofSeconds(40);

  private static final Logger LOG = Logger.getLogger(KaiStandIn.class.getName());
  private static final String SELECTED_NODE = "selected-node";
  private static final String FRACTION = "Fraction";
  private static final String REGULAR = "Regular";
  private static final String CAPABILITIES_KEYS = "NVIDIA_VISIBLE_DEVICES";

  private final KubernetesClient grouper;
  private final KubernetesClient scheduler;
  private final KubernetesClient binder;
  private final EventWriter binderEvents;
  private final Supplier<List<String>> nodeOrder;
  private final String reservationImage;
  private final List<String> reservationArgs;
  private final String reservationRuntimeClass;
  private final Duration reservationTimeout;
  private final Supplier<String> newGroup;
  private final Thread loop;
  private volatile boolean closed;

  private final Object state = new Object();
  /** When each reservation pod was created (by name), for the binder's timeout. */
  private final Map<String, Long> reservationsCreated = new HashMap<>();
  /** UIDs the last complete cycle saw, and why each pending pod waits. */
  private Set<String> seenUids = Set.of();
  private long cycles;
  private List<String> inFlight = List.of("KAI's first cycle");
  private Map<PodRef, Waiting> waiting = Map.of();

  /**
   * Why a pod waits.
   *
   * @param reason {@code QueueMissing}, {@code QueueLimit}, {@code GangIncomplete} or {@code Unschedulable}
   * @param message what KAI would say
   */
  public record Waiting(String reason, String message) {}

  /**
   * The stand-in, started.
   *
   * @param clients a client of the API server per identity
   * @param nodeOrder the nodes in the scenario's order (KAI tries them in that order in the lab)
   * @param reservationImage the reservation pods' image ({@code --resource-reservation-image})
   * @param reservationArgs the args that image runs with
   * @param reservationRuntimeClass the binder's {@code --runtime-class-name}; empty for none
   */
  public KaiStandIn(Function<UserInfo, KubernetesClient> clients, Supplier<List<String>> nodeOrder, String reservationImage, List<String> reservationArgs,
      String reservationRuntimeClass, Duration reservationTimeout) {
    this(clients, nodeOrder, reservationImage, reservationArgs, reservationRuntimeClass, reservationTimeout, () -> UUID.randomUUID().toString());
  }

  KaiStandIn(Function<UserInfo, KubernetesClient> clients, Supplier<List<String>> nodeOrder, String reservationImage, List<String> reservationArgs,
      String reservationRuntimeClass, Duration reservationTimeout, Supplier<String> newGroup) {
    this.grouper = clients.apply(POD_GROUPER);
    this.scheduler = clients.apply(SCHEDULER);
    this.binder = clients.apply(BINDER);
    this.binderEvents = new EventWriter(binder, "binder");
    this.nodeOrder = nodeOrder;
    this.reservationImage = reservationImage;
    this.reservationArgs = List.copyOf(reservationArgs);
    this.reservationRuntimeClass = reservationRuntimeClass;
    this.reservationTimeout = reservationTimeout;
    this.newGroup = newGroup;
    this.loop = new Thread(this::run, "kai-stand-in");
    loop.setDaemon(true);
    loop.start();
  }

  /** Seven random lower-case letters and digits, as KAI's webhook names a pod's ConfigMaps. */
  public static String random7() {
    String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < 7; i++) {
      out.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return out.toString();
  }

  // --- what the lab asks

  /** Whether a complete cycle saw the pod. */
  public boolean seen(String uid) {
    synchronized (state) {
      return seenUids.contains(uid);
    }
  }

  /** Whether a complete cycle ran without the pod. */
  public boolean seenDeleted(String uid) {
    synchronized (state) {
      return cycles > 0 && !seenUids.contains(uid);
    }
  }

  /** What KAI is still doing: pods not grouped yet, BindRequests not carried out; empty when idle. */
  public List<String> pendingWork() {
    synchronized (state) {
      return inFlight;
    }
  }

  /** Why each KAI pod that is not bound waits, as of the last cycle. */
  public Map<PodRef, Waiting> waiting() {
    synchronized (state) {
      return waiting;
    }
  }

  // --- the loop

  private void run() {
    while (!closed) {
      try {
        cycle();
      } catch (KubernetesClientException | IllegalStateException | IllegalArgumentException e) {
        if (!closed) {
          // the next cycle tries again, as KAI's reconcilers do; until one succeeds the lab waits, saying why
          String why = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
          LOG.log(Level.FINE, "KAI stand-in cycle failed: {0}", why);
          synchronized (state) {
            inFlight = List.of("KAI's last cycle failed: " + why);
          }
        }
      }
      try {
        Thread.sleep(100); // KAI reacts to watch events; a tenth of a second is as prompt, at little cost to a loaded machine
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** One pass of every controller over what the API holds now. */
  void cycle() {
    List<Pod> pods = scheduler.pods().inAnyNamespace().list().getItems();
    List<String> work = new ArrayList<>();
    boolean wrote = groupPods(pods);
    List<JsonNode> binds = list(scheduler, KaiResources.BIND_REQUEST);
    Map<PodRef, Waiting> why = new LinkedHashMap<>();
    wrote |= collectOrphans(pods, binds);
    wrote |= schedule(pods, binds, why);
    if (wrote) {
      pods = scheduler.pods().inAnyNamespace().list().getItems();
      binds = list(scheduler, KaiResources.BIND_REQUEST);
    }
    wrote |= bind(pods, binds, work);
    wrote |= collectReservations(pods, binds);
    if (wrote) {
      work.add("KAI acted in its last cycle");
    }
    Set<String> uids = new HashSet<>();
    pods.forEach(p -> uids.add(p.getMetadata().getUid()));
    for (Pod p : pods) {
      if (kaiPod(p) && !annotations(p).containsKey(KaiKeys.POD_GROUP_NAME) && !terminal(p)) {
        work.add("KAI's pod-grouper has not grouped " + PodRefs.of(p));
      }
    }
    synchronized (state) {
      seenUids = uids;
      cycles++;
      inFlight = List.copyOf(work);
      waiting = Map.copyOf(why);
    }
  }

  /**
   * Deletes the BindRequests whose pod is gone (or is another pod of the same name), as the garbage
   * collector deletes what a deleted owner owned.
   */
  private boolean collectOrphans(List<Pod> pods, List<JsonNode> binds) {
    Map<PodRef, Pod> byRef = new HashMap<>();
    pods.forEach(p -> byRef.put(PodRefs.of(p), p));
    boolean wrote = false;
    for (java.util.Iterator<JsonNode> i = binds.iterator(); i.hasNext();) {
      JsonNode b = i.next();
      PodRef ref = new PodRef(b.path("metadata").path("namespace").asString(""), b.path("metadata").path("name").asString(""));
      Pod pod = byRef.get(ref);
      if (pod == null || !ownedBy(b, pod)) {
        KaiResources.of(scheduler, KaiResources.BIND_REQUEST).inNamespace(ref.namespace()).withName(ref.name()).withGracePeriod(0).delete();
        i.remove();
        wrote = true;
      }
    }
    return wrote;
  }

  // --- pod-grouper

  private boolean groupPods(List<Pod> pods) {
    boolean wrote = false;
    for (Pod pod : pods) {
      if (!kaiPod(pod) || terminal(pod) || annotations(pod).containsKey(KaiKeys.POD_GROUP_NAME)) {
        continue;
      }
      String name = "pg-" + pod.getMetadata().getName() + "-" + pod.getMetadata().getUid();
      String namespace = pod.getMetadata().getNamespace();
      var groups = KaiResources.of(grouper, KaiResources.POD_GROUP).inNamespace(namespace);
      if (groups.withName(name).get() == null) {
        ObjectNode pg = PodJson.mapper().createObjectNode();
        pg.put("apiVersion", KaiKeys.POD_GROUP_API_VERSION);
        pg.put("kind", "PodGroup");
        ObjectNode metadata = pg.putObject("metadata");
        metadata.put("name", name);
        metadata.put("namespace", namespace);
        metadata.set("ownerReferences", PodJson.mapper().valueToTree(List.of(owner(pod))));
        ObjectNode spec = pg.putObject("spec");
        spec.put("minMember", 1);
        spec.put("queue", queueOf(pod));
        spec.put("priorityClassName", "train");
        groups.resource(KaiResources.generic(pg)).create();
      }
      ObjectNode patch = PodJson.mapper().createObjectNode();
      patch.putObject("metadata").putObject("annotations").put(KaiKeys.POD_GROUP_NAME, name);
      grouper.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
      wrote = true;
    }
    return wrote;
  }

  /** {@code CalcPodGroupQueue} for a pod without owners: its queue label, else {@code default-queue}. */
  static String queueOf(Pod pod) {
    Map<String, String> labels = pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
    String queue = labels.get(KaiKeys.QUEUE_LABEL);
    if (queue != null && !queue.isEmpty()) {
      return queue;
    }
    String project = labels.get("project");
    return project != null && !project.isEmpty() ? project : KaiKeys.DEFAULT_QUEUE;
  }

  // --- scheduler

  /** The cluster as the scheduler sees it in one session. */
  private final class Session {
    final Map<String, Node> nodes = new LinkedHashMap<>();
    final Map<String, Long> idle = new HashMap<>();
    final Map<String, Map<String, Long>> groupsMiB = new HashMap<>();

    Session(List<Pod> pods, List<JsonNode> binds) {
      Map<String, Node> byName = new HashMap<>();
      scheduler.nodes().list().getItems().forEach(n -> byName.put(n.getMetadata().getName(), n));
      for (String name : nodeOrder.get()) {
        Optional.ofNullable(byName.get(name)).ifPresent(n -> nodes.put(name, n));
      }
      Map<PodRef, JsonNode> bindOf = bindsByPod(binds);
      Map<String, Long> used = new HashMap<>();
      for (Pod pod : pods) {
        if (terminal(pod) || KaiKeys.RESERVATION_NAMESPACE.equals(pod.getMetadata().getNamespace())) {
          continue;
        }
        JsonNode bind = bindOf.get(PodRefs.of(pod));
        String node = Optional.ofNullable(pod.getSpec().getNodeName()).filter(s -> !s.isEmpty())
            .orElse(bind == null || failed(bind) ? "" : bind.path("spec").path("selectedNode").asString(""));
        if (node.isEmpty() || !nodes.containsKey(node)) {
          continue;
        }
        KaiGpuRequest request = KaiGpuRequest.of(pod);
        if (request.shared() && bind != null && FRACTION.equals(bind.path("spec").path("receivedResourceType").asString(""))) {
          long mib = KaiPortion.requestMiB(request, floored(nodes.get(node)));
          for (JsonNode g : bind.path("spec").path("selectedGPUGroups")) {
            groupsMiB.computeIfAbsent(node, n -> new LinkedHashMap<>()).merge(g.asString(), mib, Long::sum);
          }
        } else if (!request.shared()) {
          used.merge(node, request.wholeCards(), Long::sum);
        }
      }
      // reservation pods hold their group's card even before (or after) a fraction pod is bound to it
      for (Pod pod : pods) {
        if (KaiKeys.RESERVATION_NAMESPACE.equals(pod.getMetadata().getNamespace()) && !terminal(pod) && nodes.containsKey(pod.getSpec().getNodeName())) {
          String group = labels(pod).getOrDefault(KaiKeys.GPU_GROUP, "");
          groupsMiB.computeIfAbsent(pod.getSpec().getNodeName(), n -> new LinkedHashMap<>()).putIfAbsent(group, 0L);
        }
      }
      for (Map.Entry<String, Node> n : nodes.entrySet()) {
        long cards = cards(n.getValue());
        idle.put(n.getKey(), cards - used.getOrDefault(n.getKey(), 0L) - groupsMiB.getOrDefault(n.getKey(), Map.of()).size());
      }
    }
  }

  private boolean schedule(List<Pod> pods, List<JsonNode> binds, Map<PodRef, Waiting> why) {
    boolean wrote = false;
    Map<PodRef, JsonNode> bindOf = bindsByPod(binds);
    // a failed BindRequest is KAI's signal to schedule the pod again
    for (Map.Entry<PodRef, JsonNode> b : bindOf.entrySet()) {
      if (failed(b.getValue())) {
        KaiResources.of(scheduler, KaiResources.BIND_REQUEST).inNamespace(b.getKey().namespace()).withName(b.getKey().name()).withGracePeriod(0).delete();
        wrote = true;
      }
    }
    if (wrote) {
      return true;
    }
    Map<String, JsonNode> queues = new HashMap<>();
    list(scheduler, KaiResources.QUEUE).forEach(q -> queues.put(q.path("metadata").path("name").asString(""), q));
    Session session = null;
    List<Pod> pending = new ArrayList<>();
    for (Pod pod : pods) {
      if (kaiPod(pod) && !terminal(pod) && annotations(pod).containsKey(KaiKeys.POD_GROUP_NAME) && (pod.getSpec().getNodeName() == null || pod.getSpec().getNodeName().isEmpty())
          && !bindOf.containsKey(PodRefs.of(pod))) {
        pending.add(pod);
      }
    }
    pending.sort(Comparator.comparing((Pod p) -> p.getMetadata().getCreationTimestamp() == null ? "" : p.getMetadata().getCreationTimestamp())
        .thenComparing(p -> p.getMetadata().getName()));
    Map<String, JsonNode> podGroups = new HashMap<>();
    if (!pending.isEmpty()) {
      list(scheduler, KaiResources.POD_GROUP).forEach(g -> podGroups.put(g.path("metadata").path("namespace").asString("") + "/" + g.path("metadata").path("name").asString(""), g));
    }
    for (Pod pod : pending) {
      PodRef ref = PodRefs.of(pod);
      String groupName = annotations(pod).get(KaiKeys.POD_GROUP_NAME);
      JsonNode group = podGroups.get(ref.namespace() + "/" + groupName);
      String groupQueue = group == null ? "" : group.path("spec").path("queue").asString("");
      String queueName = groupQueue.isEmpty() ? queueOf(pod) : groupQueue;
      int minMember = group == null ? 1 : Math.max(1, group.path("spec").path("minMember").asInt(1));
      if (minMember > 1) {
        long members = pods.stream().filter(p -> !terminal(p) && ref.namespace().equals(p.getMetadata().getNamespace())
            && groupName.equals(annotations(p).get(KaiKeys.POD_GROUP_NAME))).count();
        if (members < minMember) {
          why.put(ref, new Waiting("GangIncomplete", "podgroup " + ref.namespace() + "/" + groupName + " has " + members + " of its minMember " + minMember + " pods"));
          continue;
        }
      }
      JsonNode queue = queues.get(queueName);
      if (queue == null) {
        why.put(ref, new Waiting("QueueMissing", "queue " + queueName + " does not exist"));
        continue;
      }
      if (isParent(queueName, queues.values())) {
        why.put(ref, new Waiting("QueueMissing", "queue " + queueName + " is a parent queue; only leaf queues take pods"));
        continue;
      }
      if (session == null) {
        session = new Session(pods, binds);
      }
      KaiGpuRequest request = KaiGpuRequest.of(pod);
      Optional<Waiting> overLimit = overLimit(queue, pod, request, pods, bindOf, session);
      if (overLimit.isPresent()) {
        why.put(ref, overLimit.get());
        continue;
      }
      Optional<ObjectNode> decision = request.shared() ? placeFraction(pod, request, session) : placeWhole(pod, request, session);
      if (decision.isEmpty()) {
        why.put(ref, new Waiting("Unschedulable", request.shared() ? "node(s) didn't have enough resources: GPU memory" : "node(s) didn't have enough resources: GPUs"));
        continue;
      }
      KaiResources.of(scheduler, KaiResources.BIND_REQUEST).inNamespace(ref.namespace()).resource(KaiResources.generic(decision.get())).create();
      wrote = true;
    }
    return wrote;
  }

  private Optional<Waiting> overLimit(JsonNode queue, Pod pod, KaiGpuRequest request, List<Pod> pods, Map<PodRef, JsonNode> bindOf, Session session) {
    JsonNode limit = queue.path("spec").path("resources").path("gpu").path("limit");
    double max = limit.isNumber() ? limit.asDouble() : 0;
    if (max < 0 || !request.gpu()) {
      return Optional.empty();
    }
    double allocated = 0;
    String name = queueOf(pod);
    for (Pod other : pods) {
      JsonNode bind = bindOf.get(PodRefs.of(other));
      if (kaiPod(other) && !terminal(other) && name.equals(queueOf(other)) && bind != null && !failed(bind)) {
        allocated += KaiQueues.acceptedGpus(bind);
      }
    }
    double asked = request.shared() ? request.fraction().isPresent() ? KaiPortion.fractionPortion(request.fraction().getAsDouble()) * request.devices()
        : request.devices() * (double) request.memoryMiB().getAsLong() / KaiQueues.minNodeMiB(session.nodes.values()) : request.wholeCards();
    if (allocated + asked > max + 1e-9) {
      return Optional.of(new Waiting("QueueLimit", "queue " + name + " would exceed its GPU limit of " + KaiQueues.number(max)));
    }
    return Optional.empty();
  }

  private Optional<ObjectNode> placeWhole(Pod pod, KaiGpuRequest request, Session session) {
    for (String node : session.nodes.keySet()) {
      if (session.idle.get(node) >= request.wholeCards()) {
        session.idle.merge(node, -request.wholeCards(), Long::sum);
        return Optional.of(bindRequest(pod, node, REGULAR, List.of(), request.wholeCards(), "1.00"));
      }
    }
    return Optional.empty();
  }

  private Optional<ObjectNode> placeFraction(Pod pod, KaiGpuRequest request, Session session) {
    for (Map.Entry<String, Node> n : session.nodes.entrySet()) {
      String node = n.getKey();
      long floored = floored(n.getValue());
      double portion = request.fraction().isPresent() ? request.fraction().getAsDouble() : KaiPortion.memoryPortion(request.memoryMiB().getAsLong(), floored);
      if (!KaiPortion.validPortion(portion) || cards(n.getValue()) == 0) {
        continue;
      }
      long mib = KaiPortion.requestMiB(request, floored);
      Map<String, Long> groups = session.groupsMiB.computeIfAbsent(node, k -> new LinkedHashMap<>());
      Optional<List<String>> chosen = GpuPack.choose(new GpuPack.NodeCards(floored, session.idle.get(node), groups), mib, request.devices(), newGroup);
      if (chosen.isEmpty()) {
        continue;
      }
      for (String g : chosen.get()) {
        if (!groups.containsKey(g)) {
          session.idle.merge(node, -1L, Long::sum);
        }
        groups.merge(g, mib, Long::sum);
      }
      return Optional.of(bindRequest(pod, node, FRACTION, chosen.get(), request.devices(), KaiPortion.formatted(portion)));
    }
    return Optional.empty();
  }

  /** KAI's BindRequest for a decision: named after the pod, in its namespace, owned by it. */
  static ObjectNode bindRequest(Pod pod, String node, String type, List<String> groups, long count, String portion) {
    ObjectNode b = PodJson.mapper().createObjectNode();
    b.put("apiVersion", KaiKeys.BIND_REQUEST_API_VERSION);
    b.put("kind", "BindRequest");
    ObjectNode metadata = b.putObject("metadata");
    metadata.put("name", pod.getMetadata().getName());
    metadata.put("namespace", pod.getMetadata().getNamespace());
    metadata.putObject("labels").put(SELECTED_NODE, node);
    metadata.set("ownerReferences", PodJson.mapper().valueToTree(List.of(owner(pod))));
    ObjectNode spec = b.putObject("spec");
    spec.put("podName", pod.getMetadata().getName());
    spec.put("selectedNode", node);
    spec.put("receivedResourceType", type);
    if (!groups.isEmpty()) {
      ArrayNode g = spec.putArray("selectedGPUGroups");
      groups.forEach(g::add);
    }
    spec.putObject("receivedGPU").put("count", count).put("portion", portion);
    return b;
  }

  // --- binder

  private boolean bind(List<Pod> pods, List<JsonNode> binds, List<String> work) {
    boolean wrote = false;
    Map<PodRef, Pod> byRef = new HashMap<>();
    pods.forEach(p -> byRef.put(PodRefs.of(p), p));
    for (JsonNode b : binds) {
      String phase = b.path("status").path("phase").asString("");
      if (phase.equals("Succeeded") || phase.equals("Failed")) {
        continue;
      }
      PodRef ref = new PodRef(b.path("metadata").path("namespace").asString(""), b.path("metadata").path("name").asString(""));
      Pod pod = byRef.get(ref);
      if (pod == null || !ownedBy(b, pod)) {
        KaiResources.of(binder, KaiResources.BIND_REQUEST).inNamespace(ref.namespace()).withName(ref.name()).withGracePeriod(0).delete();
        wrote = true;
        continue;
      }
      String node = b.path("spec").path("selectedNode").asString("");
      if (pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty()) {
        status(ref, "Succeeded", "");
        wrote = true;
        continue;
      }
      if (FRACTION.equals(b.path("spec").path("receivedResourceType").asString(""))) {
        Reservation reservation = reserve(pod, node, b, pods);
        if (reservation.uuids().isEmpty()) {
          reservation.waitingFor().ifPresent(work::add);
          wrote |= reservation.changed();
          continue;
        }
        preBind(pod, node, b, reservation.uuids().get());
      }
      binder.bindings().inNamespace(ref.namespace()).resource(new io.fabric8.kubernetes.api.model.BindingBuilder()
          .withNewMetadata().withName(ref.name()).withNamespace(ref.namespace()).withUid(pod.getMetadata().getUid()).endMetadata()
          .withNewTarget().withKind("Node").withApiVersion("v1").withName(node).endTarget().build()).create();
      status(ref, "Succeeded", "");
      wrote = true;
    }
    return wrote;
  }

  /**
   * Where the reservation of a BindRequest's groups stands.
   *
   * @param uuids the cards, once every group's reservation pod reported its own
   * @param waitingFor what the binder waits for, while it waits
   * @param changed whether it wrote to the API (created or deleted a reservation pod, failed the BindRequest)
   */
  private record Reservation(Optional<List<String>> uuids, Optional<String> waitingFor, boolean changed) {
    static Reservation waiting(String what, boolean changed) {
      return new Reservation(Optional.empty(), Optional.of(what), changed);
    }
  }

  /**
   * The card UUID of each of the BindRequest's groups, from the groups' reservation pods (created when
   * missing); empty while one has not reported, and — after KAI's timeout — the BindRequest fails.
   */
  private Reservation reserve(Pod pod, String node, JsonNode bind, List<Pod> pods) {
    List<String> uuids = new ArrayList<>();
    PodRef ref = PodRefs.of(pod);
    for (JsonNode g : bind.path("spec").path("selectedGPUGroups")) {
      String group = g.asString();
      Optional<Pod> reservation = pods.stream().filter(p -> KaiKeys.RESERVATION_NAMESPACE.equals(p.getMetadata().getNamespace()) && !terminal(p)
          && group.equals(labels(p).get(KaiKeys.GPU_GROUP))).findFirst();
      String name = ReservationPods.name(node, group);
      if (reservation.isEmpty()) {
        binder.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).resource(PodJson.mapper().treeToValue(
            ReservationPods.pod(node, group, PodJson.mapper().valueToTree(pod), reservationImage, reservationArgs, reservationRuntimeClass), Pod.class)).create();
        synchronized (state) {
          reservationsCreated.put(name, System.nanoTime());
        }
        return Reservation.waiting("KAI's binder waits for reservation pod " + KaiKeys.RESERVATION_NAMESPACE + "/" + name + " of " + ref, true);
      }
      String uuid = annotations(reservation.get()).getOrDefault(KaiKeys.RESERVE_FOR_GPU_INDEX, "");
      if (uuid.isEmpty()) {
        long created;
        synchronized (state) {
          created = reservationsCreated.computeIfAbsent(reservation.get().getMetadata().getName(), k -> System.nanoTime());
        }
        if (System.nanoTime() - created > reservationTimeout.toNanos()) {
          String rname = reservation.get().getMetadata().getName();
          binder.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(rname).withGracePeriod(0).delete();
          synchronized (state) {
            reservationsCreated.remove(rname);
          }
          String message = "Failed to bind pod " + ref + " to node " + node + ": failed to reserve GPUs: failed waiting for GPU reservation pod to allocate: "
              + KaiKeys.RESERVATION_NAMESPACE + "/" + rname;
          binderEvents.warning(pod, "BindingError", message);
          status(ref, "Failed", message);
          return new Reservation(Optional.empty(), Optional.empty(), true);
        }
        return Reservation.waiting("KAI's binder waits for reservation pod " + KaiKeys.RESERVATION_NAMESPACE + "/" + reservation.get().getMetadata().getName()
            + " of " + ref + " to report its card", false);
      }
      uuids.add(uuid);
    }
    return new Reservation(Optional.of(uuids), Optional.empty(), false);
  }

  /** The group label(s), the gpusharing and hamicore plugins' ConfigMaps, the bind annotation. */
  private void preBind(Pod pod, String node, JsonNode bind, List<String> uuids) {
    String namespace = pod.getMetadata().getNamespace();
    List<String> groups = new ArrayList<>();
    bind.path("spec").path("selectedGPUGroups").forEach(g -> groups.add(g.asString()));
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode podLabels = patch.putObject("metadata").putObject("labels");
    if (groups.size() == 1) {
      podLabels.put(KaiKeys.GPU_GROUP, groups.get(0));
    } else {
      groups.forEach(g -> podLabels.put(KaiKeys.MULTI_GPU_GROUP_PREFIX + g, g));
    }
    ((ObjectNode) patch.path("metadata")).putObject("annotations").put(KaiKeys.RECEIVED_RESOURCE_TYPE, FRACTION);
    binder.pods().inNamespace(namespace).withName(pod.getMetadata().getName()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    String prefix = annotations(pod).getOrDefault(KaiKeys.SHARED_GPU_CONFIGMAP, "");
    Optional<FractionContainer> container = FractionContainer.of(PodJson.mapper().valueToTree(pod));
    if (prefix.isEmpty() || container.isEmpty()) {
      return; // admitted without KAI's webhook: gpusharing has nowhere to write
    }
    String portion = bind.path("spec").path("receivedGPU").path("portion").asString("");
    Map<String, String> data = new LinkedHashMap<>();
    data.put(CAPABILITIES_KEYS, String.join(",", uuids));
    data.put("GPU_PORTION", portion);
    data.put("RUNAI_NUM_OF_GPUS", portion);
    Node object = binder.nodes().withName(node).get();
    String label = object == null || object.getMetadata().getLabels() == null ? null : object.getMetadata().getLabels().get(KaiKeys.NODE_GPU_MEMORY_LABEL);
    KaiPortion.memoryLimit(label, portion).ifPresent(limit -> data.put(KaiKeys.CUDA_DEVICE_MEMORY_LIMIT, limit));
    upsert(pod, container.get().capabilitiesConfigMap(prefix), data);
    upsert(pod, container.get().directEnvConfigMap(prefix), Map.of());
  }

  private void upsert(Pod pod, String name, Map<String, String> data) {
    String namespace = pod.getMetadata().getNamespace();
    ConfigMap existing = binder.configMaps().inNamespace(namespace).withName(name).get();
    if (existing != null) {
      Map<String, String> merged = new LinkedHashMap<>(existing.getData() == null ? Map.of() : existing.getData());
      merged.putAll(data);
      existing.setData(merged);
      binder.configMaps().inNamespace(namespace).resource(existing).update();
      return;
    }
    binder.configMaps().inNamespace(namespace).resource(new ConfigMapBuilder().withNewMetadata().withName(name).withNamespace(namespace)
        .withOwnerReferences(owner(pod)).endMetadata().withData(new LinkedHashMap<>(data)).build()).create();
  }

  private void status(PodRef ref, String phase, String reason) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode status = patch.putObject("status").put("phase", phase);
    if (!reason.isEmpty()) {
      status.put("reason", reason);
    }
    KaiResources.of(binder, KaiResources.BIND_REQUEST).inNamespace(ref.namespace()).withName(ref.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
  }

  /**
   * The binder's sync: a reservation pod whose group no live fraction pod and no unfinished BindRequest
   * names any more is deleted.
   */
  private boolean collectReservations(List<Pod> pods, List<JsonNode> binds) {
    Set<String> used = new HashSet<>();
    for (Pod p : pods) {
      if (!terminal(p) && !KaiKeys.RESERVATION_NAMESPACE.equals(p.getMetadata().getNamespace())) {
        labels(p).forEach((k, v) -> {
          if (k.equals(KaiKeys.GPU_GROUP) || k.startsWith(KaiKeys.MULTI_GPU_GROUP_PREFIX)) {
            used.add(v);
          }
        });
      }
    }
    for (JsonNode b : binds) {
      String phase = b.path("status").path("phase").asString("");
      if (!phase.equals("Failed")) {
        b.path("spec").path("selectedGPUGroups").forEach(g -> used.add(g.asString()));
      }
    }
    boolean wrote = false;
    for (Pod p : pods) {
      if (KaiKeys.RESERVATION_NAMESPACE.equals(p.getMetadata().getNamespace()) && !used.contains(labels(p).getOrDefault(KaiKeys.GPU_GROUP, ""))) {
        binder.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(p.getMetadata().getName()).withGracePeriod(0).delete();
        wrote = true;
      }
    }
    return wrote;
  }

  // --- helpers

  static boolean kaiPod(Pod pod) {
    return KaiKeys.SCHEDULER_NAME.equals(pod.getSpec().getSchedulerName()) && !KaiKeys.RESERVATION_NAMESPACE.equals(pod.getMetadata().getNamespace());
  }

  static boolean terminal(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    return "Succeeded".equals(phase) || "Failed".equals(phase) || pod.getMetadata().getDeletionTimestamp() != null;
  }

  private static boolean failed(JsonNode bind) {
    return bind.path("status").path("phase").asString("").equals("Failed");
  }

  private static boolean ownedBy(JsonNode bind, Pod pod) {
    for (JsonNode o : bind.path("metadata").path("ownerReferences")) {
      if (o.path("uid").asString("").equals(pod.getMetadata().getUid())) {
        return true;
      }
    }
    return false;
  }

  private static boolean isParent(String queue, java.util.Collection<JsonNode> queues) {
    return queues.stream().anyMatch(q -> queue.equals(q.path("spec").path("parentQueue").asString("")));
  }

  static Map<String, String> annotations(Pod pod) {
    return pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
  }

  static Map<String, String> labels(Pod pod) {
    return pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
  }

  static long floored(Node node) {
    String label = node.getMetadata().getLabels() == null ? null : node.getMetadata().getLabels().get(KaiKeys.NODE_GPU_MEMORY_LABEL);
    OptionalLong floored = KaiPortion.flooredMiB(label);
    return floored.orElse(KaiPortion.UNSYNCED_MIB);
  }

  static long cards(Node node) {
    Quantity q = node.getStatus() == null || node.getStatus().getAllocatable() == null ? null : node.getStatus().getAllocatable().get(KaiGpuRequest.GPU_RESOURCE);
    return q == null ? 0 : Quantity.getAmountInBytes(q).longValue();
  }

  private static OwnerReference owner(Pod pod) {
    return new OwnerReferenceBuilder().withApiVersion("v1").withKind("Pod").withName(pod.getMetadata().getName()).withUid(pod.getMetadata().getUid()).build();
  }

  static Map<PodRef, JsonNode> bindsByPod(List<JsonNode> binds) {
    Map<PodRef, JsonNode> out = new HashMap<>();
    binds.forEach(b -> out.put(new PodRef(b.path("metadata").path("namespace").asString(""), b.path("metadata").path("name").asString("")), b));
    return out;
  }

  static List<JsonNode> list(KubernetesClient client, io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext context) {
    List<JsonNode> out = new ArrayList<>();
    var op = KaiResources.of(client, context);
    List<GenericKubernetesResource> items = context.isNamespaceScoped() ? op.inAnyNamespace().list().getItems() : op.list().getItems();
    items.forEach(i -> out.add(KaiResources.json(i)));
    return out;
  }

  @Override
  public void close() {
    closed = true;
    loop.interrupt();
    try {
      loop.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
