package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.ReserveResult;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import io.vgpu.k8s.pod.PodRequestParser;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the engine's ledger in step with the cluster through informers on pods, nodes and resource
 * quotas. Nothing is persisted: on start the ledger is rebuilt from what the API server holds — nodes'
 * {@code hami.io/node-nvidia-register} annotations and pods' {@code hami.io/vgpu-devices-allocated} —
 * so a restarted scheduler neither loses nor duplicates a grant.
 *
 * <p>Pods can write their own annotations, so a grant is taken from them only when it is consistent:
 * the pod's spec asks for devices (its containers' resources, which its owner cannot change and the
 * webhook has checked), the node exists and registers every granted device, and either the pod is
 * bound to that node (it runs there, so it is counted even where it overflows a card — under-counting
 * would let the card be over-committed) or it is a reservation this scheduler made, or one found when the ledger was rebuilt
 * (at start, or on taking over leadership) whose {@code hami.io/vgpu-time} is live and which fits what
 * is left. Anything else is ignored with one Warning Event on the pod. Once a grant is counted, later
 * edits of the pod's annotations change nothing but the init-container shrink below.
 *
 * <p>Pods that finished release their grant; pods being deleted keep it until they are gone; a pod whose
 * init containers all completed shrinks to its app containers' usage. A reservation of a pod never
 * bound is given back after the reservation timeout ({@link #reapStaleReservations}), timed from its
 * {@code hami.io/vgpu-time} or, when that is missing or unreadable, from when the ledger first saw it.
 */
public final class ClusterLedger implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterLedger.class);
  /** How far a reservation time may lie ahead of this clock (another instance's clock) and still count. */
  private static final Duration CLOCK_SKEW = Duration.ofMinutes(1);

  private final KubernetesClient client;
  private final Engine engine;
  private final ResourceSchema schema;
  private final PodRequestParser requests;
  private final Predicate<Node> nodeFilter;
  private final NodeHealth health;
  private final EventRecorder events;
  private final Clock clock;
  private final Duration reservationTimeout;
  /** The queue each pod's grant is charged to (KAI's dialect), null for a pod in none. */
  private final Function<Pod, @Nullable String> queues;
  /** Pods whose reservation the stale-reservation reaper returned: it counts again only once bound or filtered anew. */
  private final Set<PodRef> reaped = ConcurrentHashMap.newKeySet();
  /** When the ledger first saw each reservation, for those whose own time cannot be read. */
  private final Map<PodRef, Instant> firstSeen = new ConcurrentHashMap<>();
  /**
   * The pod each counted grant belongs to, by UID: a pod recreated under the same name (a StatefulSet's)
   * is another pod, and an event of the old one must not touch the new one's grant.
   */
  private final Map<PodRef, Owner> owners = new ConcurrentHashMap<>();
  /** Pods whose bind is under way: their reservation is the bind's, and the reaper leaves it alone. */
  private final Set<PodRef> binding = ConcurrentHashMap.newKeySet();
  /** The last grant annotation ignored per pod, so that each is reported once. */
  private final Map<PodRef, String> ignored = new ConcurrentHashMap<>();
  /** Register annotations last seen per node, so an unchanged node is not re-registered. */
  private final Map<String, Registration> registered = new ConcurrentHashMap<>();

  /** What a node's devices are read from: its register and cordon annotations. */
  private record Registration(String register, String cordon) {}
  private final Set<String> warnedNodes = ConcurrentHashMap.newKeySet();
  private final List<Consumer<String>> lockReleases = new CopyOnWriteArrayList<>();
  private final List<BiConsumer<PodRef, @Nullable String>> podDeletions = new CopyOnWriteArrayList<>();
  private final List<SharedIndexInformer<?>> informers = new ArrayList<>();
  private final Object nodeLock = new Object();
  private final Object podLock = new Object();
  /** The informers' client, which decodes lean ({@link LeanDecoding}); null until started. */
  private @Nullable KubernetesClient informerClient;
  private @Nullable SharedIndexInformer<Pod> pods;
  private @Nullable SharedIndexInformer<Node> nodes;
  private @Nullable SharedIndexInformer<ResourceQuota> quotas;
  private volatile boolean synced;

  /**
   * Whose a grant is: the pod's UID (null for a pod without one), and whether this scheduler's filter
   * claimed it for that UID (kube-scheduler asks only about pods that exist, so that UID is the
   * newest of the name, and a cached pod of another UID is an older one the informer has yet to drop).
   */
  private record Owner(@Nullable String uid, boolean filtered) {
    boolean is(@Nullable String other) {
      return uid == null || other == null || uid.equals(other);
    }
  }

  /** Where the ledger's objects come from, as its log says. */
  private String source = "the cluster";

  /** Objects per page of an informer's list (client-go's reflector uses the same). */
  private static final long LIST_PAGE = 500;

  /**
   * A ledger that follows the cluster once {@link #start} is called.
   *
   * @param nodeFilter which nodes to register (the scheduler's {@code --node-label-selector})
   * @param events where ignored grants are reported, on their pods
   * @param reservationTimeout how long a reservation of a pod never bound stays live
   */
  public ClusterLedger(
      KubernetesClient client, Engine engine, Predicate<Node> nodeFilter, NodeHealth health, EventRecorder events, Clock clock, Duration reservationTimeout) {
    this(client, engine, nodeFilter, health, events, clock, reservationTimeout, pod -> null);
  }

  /**
   * A ledger that follows the cluster once {@link #start} is called, charging each grant it restores or
   * takes over to the queue {@code queues} names for its pod (KAI's dialect; null for none). A grant of
   * a running pod is charged whatever its queue's limit says; one taken over only within it.
   *
   * @param nodeFilter which nodes to register (the scheduler's {@code --node-label-selector})
   * @param events where ignored grants are reported, on their pods
   * @param reservationTimeout how long a reservation of a pod never bound stays live
   */
  public ClusterLedger(
      KubernetesClient client,
      Engine engine,
      Predicate<Node> nodeFilter,
      NodeHealth health,
      EventRecorder events,
      Clock clock,
      Duration reservationTimeout,
      Function<Pod, @Nullable String> queues) {
    this.client = client;
    this.engine = engine;
    this.schema = engine.config().schema();
    this.requests = new PodRequestParser(schema);
    this.nodeFilter = nodeFilter;
    this.health = health;
    this.events = events;
    this.clock = clock;
    this.reservationTimeout = reservationTimeout;
    this.queues = queues;
  }

  /**
   * Starts the informers and blocks until their caches are filled and the ledger rebuilt.
   *
   * @return how long the rebuild took
   * @throws IllegalStateException when the caches do not fill within {@code timeout}
   */
  public Duration start(Duration timeout) {
    long start = System.nanoTime();
    // The caches keep lean copies (LeanStore): at 50,000 pods the full objects would be most of the heap.
    // The CPU feed goes first on each informer, so a pod's CPU is known when its grant is restored.
    NodeCpuFeed cpu = new NodeCpuFeed(engine, this::node, this::pod);
    // Every list page and watch event is read straight into the caches' lean shape (LeanDecoding), and
    // the handlers get those lean objects: nothing a handler reads is missing from them.
    LeanStore<Pod> podStore = LeanStore.decodedPods();
    KubernetesClient lean = LeanDecoding.client(client, podStore.reader(schema));
    informerClient = lean;
    nodes = lean.nodes().withLimit(LIST_PAGE).runnableInformer(0).itemStore(LeanStore.decodedNodes());
    nodes.addEventHandler(cpu.nodeHandler());
    nodes.addEventHandler(new NodeHandler());
    quotas = lean.resourceQuotas().inAnyNamespace().runnableInformer(0);
    quotas.addEventHandler(new ReconcileOnEvent<ResourceQuota>(quota -> refreshQuotas(quota.getMetadata().getNamespace())));
    // Listed in pages, as client-go's reflector lists: one body of every pod would be held whole while
    // decoded (hundreds of MB at 50,000 pods), and the JDK's HTTP/2 client keeps the last one it read.
    pods = lean.pods().inAnyNamespace().withLimit(LIST_PAGE).runnableInformer(0).itemStore(podStore);
    pods.addEventHandler(cpu.podHandler());
    pods.addEventHandler(new PodHandler());
    // Nodes and quotas first, so that restored grants land on registered nodes.
    informers.add(nodes);
    informers.add(quotas);
    informers.add(pods);
    for (SharedIndexInformer<?> informer : informers) {
      try {
        informer.start().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        throw new IllegalStateException("informer caches did not sync within " + timeout + ": " + e.getMessage(), e);
      }
    }
    // The caches are full, but their handlers may still be working through the initial list: settle
    // every object now from the cache itself, so the ledger is complete before anyone asks.
    nodes.getIndexer().list().forEach(n -> cpu.reconcileNode(n.getMetadata().getName()));
    pods.getIndexer().list().forEach(p -> cpu.reconcilePod(PodRefs.of(p)));
    for (Node node : nodes.getIndexer().list()) {
      reconcileNode(node.getMetadata().getName());
    }
    for (ResourceQuota quota : quotas.getIndexer().list()) {
      refreshQuotas(quota.getMetadata().getNamespace());
    }
    adoptReservations();
    synced = true;
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    LOG.info("ledger rebuilt from {} in {} ms: {} nodes, {} grants", source, took.toMillis(), engine.nodeNames().size(), engine.grants().size());
    return took;
  }

  /** Names where this ledger's objects come from in its log, where that is not the cluster. */
  ClusterLedger source(String name) {
    this.source = name;
    return this;
  }

  /** Whether the caches are filled and the ledger reflects the cluster. */
  public boolean synced() {
    return synced;
  }

  /**
   * Tells {@code listener} the name of every node whose {@code hami.io/mutex.lock} the cache sees go
   * away, or that is deleted. It runs on the informer's thread and must return at once.
   */
  public void onNodeLockReleased(Consumer<String> listener) {
    lockReleases.add(listener);
  }

  /**
   * Tells {@code listener} of every pod deleted, with its UID (null when it had none), once the ledger
   * has settled it. It runs on the informer's thread and must return at once.
   */
  public void onPodDeleted(BiConsumer<PodRef, @Nullable String> listener) {
    podDeletions.add(listener);
  }

  /** A pod from the informer cache, lean: see {@link LeanStore} for what it keeps. */
  public Optional<Pod> pod(PodRef ref) {
    SharedIndexInformer<Pod> informer = pods;
    return informer == null ? Optional.empty() : Optional.ofNullable(informer.getIndexer().getByKey(ref.namespace() + "/" + ref.name()));
  }

  /** A node from the informer cache, lean: see {@link LeanStore#lean(Node)} for what it keeps. */
  public Optional<Node> node(String name) {
    SharedIndexInformer<Node> informer = nodes;
    return informer == null ? Optional.empty() : Optional.ofNullable(informer.getIndexer().getByKey(name));
  }

  /** Every node in the informer cache, lean. */
  public List<Node> nodes() {
    SharedIndexInformer<Node> informer = nodes;
    return informer == null ? List.of() : informer.getIndexer().list();
  }

  /**
   * Adds a handler of the pod informer's events after the ledger's own, called on the thread that
   * received each event: a test that holds one there makes the ledger lag behind the API server, as a
   * slow watch does. Only once started.
   */
  void addPodEventHandler(ResourceEventHandler<Pod> handler) {
    SharedIndexInformer<Pod> informer = pods;
    if (informer == null) {
      throw new IllegalStateException("the ledger is not started");
    }
    informer.addEventHandler(handler);
  }

  /** Every pod in the informer cache, lean. */
  public List<Pod> pods() {
    SharedIndexInformer<Pod> informer = pods;
    return informer == null ? List.of() : informer.getIndexer().list();
  }

  /**
   * Settles every pod in the cache, taking over the live reservations found there: at start, the
   * previous scheduler's; on becoming leader, the previous leader's. Bound pods go first, so that what
   * runs is counted before any reservation competes with it.
   */
  public void adoptReservations() {
    SharedIndexInformer<Pod> informer = pods;
    if (informer == null) {
      return;
    }
    List<Pod> all = new ArrayList<>(informer.getIndexer().list());
    all.sort(Comparator.comparing((Pod p) -> !bound(p)));
    for (Pod pod : all) {
      reconcilePod(pod.getMetadata().getNamespace(), pod.getMetadata().getName(), true);
    }
  }

  /**
   * The extender is about to reserve a grant for the pod with this UID (giving back what the name held
   * first): from now on its grant is this pod's, and events of an older pod of the same name leave it
   * alone.
   *
   * @param uid the pod's UID from kube-scheduler's arguments; null when it has none
   */
  public void filtering(PodRef pod, @Nullable String uid) {
    synchronized (podLock) {
      owners.put(pod, new Owner(uid, true));
      reaped.remove(pod);
      ignored.remove(pod);
      firstSeen.put(pod, clock.instant());
    }
  }

  /** What the ledger holds for a pod kube-scheduler binds, against the grant its annotations name. */
  public enum BindHold {
    /** That very grant, reserved for that pod: it is pinned for the bind. */
    HELD,
    /** Another grant, or one of another pod of the same name. */
    DIFFERENT,
    /** Nothing: the reservation was given back, or never found (the scheduler restarted). */
    MISSING
  }

  /**
   * Compares the reservation held for the pod with the grant its annotations name, and pins what is
   * held against the stale-reservation reaper until {@link #bindEnded}, so that a reservation found
   * held is still held when the Binding is posted.
   *
   * @param uid the pod's UID, null when it has none
   */
  public BindHold holdForBind(PodRef pod, @Nullable String uid, PodGrant annotated) {
    synchronized (podLock) {
      binding.add(pod);
      Optional<PodGrant> held = engine.grant(pod);
      if (held.isEmpty()) {
        return BindHold.MISSING;
      }
      Owner owner = owners.get(pod);
      return held.get().equals(annotated) && (owner == null || owner.is(uid)) ? BindHold.HELD : BindHold.DIFFERENT;
    }
  }

  /**
   * Reserves again, for a bind, the grant of a pod whose reservation was given back: only if it fits
   * what is left (never a card given out twice), and pinned like a held one.
   */
  public ReserveResult reserveForBind(PodRef pod, @Nullable String uid, PodGrant annotated) {
    return reserveForBind(pod, uid, annotated, null);
  }

  /**
   * As {@link #reserveForBind(PodRef, String, PodGrant)}, charging the grant to {@code queue} within its
   * limit (a pod of KAI's dialect; null for none).
   */
  public ReserveResult reserveForBind(PodRef pod, @Nullable String uid, PodGrant annotated, @Nullable String queue) {
    synchronized (podLock) {
      binding.add(pod);
      Optional<PodGrant> held = engine.grant(pod);
      if (held.isPresent()) {
        // Reserved meanwhile (a filter of the same pod): the bind goes ahead only on the same grant.
        return held.get().equals(annotated)
            ? new ReserveResult(ReserveResult.Status.RESERVED, "")
            : new ReserveResult(ReserveResult.Status.CONFLICT, "the pod was filtered again meanwhile");
      }
      ReserveResult result = engine.reserve(annotated, queue);
      if (result.reserved()) {
        owners.put(pod, new Owner(uid, true));
        reaped.remove(pod);
        firstSeen.put(pod, clock.instant());
      }
      return result;
    }
  }

  /** The bind of the pod is over (bound or refused): its reservation is the reaper's to judge again. */
  public void bindEnded(PodRef pod) {
    binding.remove(pod);
  }

  /**
   * Gives back the reservations of pods filtered but never bound within the reservation timeout (HAMi
   * keeps them until the pod is deleted, which strands capacity when kube-scheduler gives up on a pod).
   * A reservation whose {@code hami.io/vgpu-time} is missing, unreadable or in the future is timed from
   * when the ledger first saw it; {@code hami.io/bind-phase} makes no difference while the pod is unbound.
   *
   * @return how many reservations were given back
   */
  public int reapStaleReservations() {
    Instant now = clock.instant();
    Instant cutoff = now.minus(reservationTimeout);
    int reapedNow = 0;
    for (PodGrant grant : engine.grants()) {
      synchronized (podLock) {
        Optional<Pod> cached = pod(grant.pod());
        Owner owner = owners.get(grant.pod());
        // A cached pod of another UID is not the grant's: the informer has yet to catch up with it.
        if (cached.isEmpty() || bound(cached.get()) || binding.contains(grant.pod()) || (owner != null && !owner.is(cached.get().getMetadata().getUid()))) {
          continue;
        }
        Instant since = reservationTime(cached.get(), now).orElseGet(() -> firstSeen.computeIfAbsent(grant.pod(), k -> now));
        if (since.isBefore(cutoff) && engine.grant(grant.pod()).equals(Optional.of(grant))) {
          LOG.info("pod {} was filtered to {} at {} but never bound: giving its reservation back", grant.pod(), grant.node(), since);
          reaped.add(grant.pod());
          engine.release(grant.pod());
          reapedNow++;
        }
      }
    }
    return reapedNow;
  }

  /**
   * Gives back the reservation of a pod not bound (a gang member whose gang's hold ran out), as the
   * stale-reservation reaper does: it counts again only once bound or filtered anew. A pod bound, or
   * whose bind is under way, keeps its grant.
   *
   * @param why the end of the log line, after "giving its reservation back: "
   * @return whether a reservation was given back
   */
  public boolean giveBack(PodRef pod, String why) {
    synchronized (podLock) {
      Optional<Pod> cached = pod(pod);
      if (binding.contains(pod) || (cached.isPresent() && bound(cached.get())) || engine.grant(pod).isEmpty()) {
        return false;
      }
      LOG.info("pod {} was never bound: giving its reservation back: {}", pod, why);
      reaped.add(pod);
      engine.release(pod);
      return true;
    }
  }

  /** The pod's {@code hami.io/vgpu-time}, when it is a time that can have been written already. */
  private Optional<Instant> reservationTime(Pod pod, Instant now) {
    String time = annotations(pod.getMetadata().getAnnotations()).get(HamiAnnotations.ASSIGNED_TIME);
    if (time == null) {
      return Optional.empty();
    }
    try {
      Instant at = Instant.ofEpochSecond(Long.parseLong(time.trim()));
      return at.isAfter(now.plus(CLOCK_SKEW)) ? Optional.empty() : Optional.of(at);
    } catch (NumberFormatException | java.time.DateTimeException e) {
      return Optional.empty();
    }
  }

  private static boolean bound(Pod pod) {
    return pod.getSpec() != null && pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty();
  }

  /** Re-evaluates a node's registration and health (the periodic register pass). */
  public void refreshNode(Node node) {
    reconcileNode(node.getMetadata().getName());
  }

  @Override
  public void close() {
    informers.forEach(SharedIndexInformer::close);
    KubernetesClient lean = informerClient;
    if (lean != null) {
      lean.close();
    }
  }

  // --- Nodes

  private void registerNode(Node node) {
    String name = node.getMetadata().getName();
    if (!nodeFilter.test(node)) {
      forgetNode(name);
      return;
    }
    Map<String, String> annotations = annotations(node.getMetadata().getAnnotations());
    String register = annotations.get(HamiAnnotations.NODE_REGISTER);
    if (register == null || register.isBlank()) {
      forgetNode(name);
      return;
    }
    if (!health.healthy(node)) {
      if (registered.remove(name) != null) {
        LOG.warn("node {} has no allocatable {}: its devices are withdrawn until it reports them again", name, schema.countResource());
      }
      engine.removeNode(name);
      return;
    }
    // Compared, not concatenated: every lock and unlock of the node comes through here unchanged.
    Registration signature = new Registration(register, annotations.getOrDefault(HamiAnnotations.DEVICE_CORDON, ""));
    if (signature.equals(registered.get(name)) && engine.hasNode(name)) {
      return;
    }
    List<SchedulableDevice> devices;
    try {
      devices = NodeRegisterCodec.decode(register);
    } catch (IllegalArgumentException e) {
      if (warnedNodes.add(name + register)) {
        LOG.warn("node {}: ignoring unreadable {}: {}", name, HamiAnnotations.NODE_REGISTER, e.getMessage());
      }
      engine.removeNode(name);
      registered.remove(name);
      return;
    }
    engine.upsertNode(new NodeDevices(name, devices, cordoned(annotations.get(HamiAnnotations.DEVICE_CORDON))));
    registered.put(name, signature);
  }

  private void forgetNode(String name) {
    registered.remove(name);
    engine.removeNode(name);
    health.forget(name);
  }

  private static Set<String> cordoned(@Nullable String value) {
    Set<String> out = new HashSet<>();
    if (value != null) {
      for (String uuid : value.split(",")) {
        if (!uuid.isBlank()) {
          out.add(uuid.trim());
        }
      }
    }
    return out;
  }

  /**
   * Brings one node in line with the cache's current copy. Handlers and the start-up pass both come
   * here, so whatever order they run in, the last one leaves the ledger matching the cache.
   */
  private void reconcileNode(String name) {
    synchronized (nodeLock) {
      SharedIndexInformer<Node> informer = nodes;
      Node node = informer == null ? null : informer.getIndexer().getByKey(name);
      if (node == null) {
        forgetNode(name);
      } else {
        registerNode(node);
      }
    }
  }

  private final class NodeHandler implements ResourceEventHandler<Node> {
    @Override
    public void onAdd(Node node) {
      reconcileNode(node.getMetadata().getName());
    }

    @Override
    public void onUpdate(Node old, Node node) {
      reconcileNode(node.getMetadata().getName());
      if (lock(old) != null && lock(node) == null) {
        lockReleases.forEach(l -> l.accept(node.getMetadata().getName()));
      }
    }

    @Override
    public void onDelete(Node node, boolean finalStateUnknown) {
      reconcileNode(node.getMetadata().getName());
      lockReleases.forEach(l -> l.accept(node.getMetadata().getName()));
    }

    private static @Nullable String lock(Node node) {
      return annotations(node.getMetadata().getAnnotations()).get(HamiAnnotations.NODE_LOCK);
    }
  }

  // --- Pods

  private final class PodHandler implements ResourceEventHandler<Pod> {
    @Override
    public void onAdd(Pod pod) {
      reconcilePod(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    }

    @Override
    public void onUpdate(Pod old, Pod pod) {
      reconcilePod(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
      podDeleted(pod.getMetadata().getNamespace(), pod.getMetadata().getName(), pod.getMetadata().getUid());
      PodRef ref = new PodRef(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
      podDeletions.forEach(l -> l.accept(ref, pod.getMetadata().getUid()));
    }
  }

  private void trackPod(Pod pod, boolean adopt) {
    PodRef ref = new PodRef(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    String uid = pod.getMetadata().getUid();
    Owner owner = owners.get(ref);
    if (owner != null && !owner.is(uid)) {
      if (owner.filtered()) {
        // An older pod of this name, still in the cache: the grant is its successor's.
        return;
      }
      // The cache holds a newer pod of this name (its predecessor's deletion came as a replacement):
      // what the old one held is given back before the new one is looked at.
      engine.release(ref);
      forgetPod(ref);
    }
    Map<String, String> annotations = annotations(pod.getMetadata().getAnnotations());
    String node = annotations.get(HamiAnnotations.ASSIGNED_NODE);
    String allocated = annotations.get(HamiAnnotations.DEVICES_ALLOCATED);
    if (node == null || allocated == null) {
      return;
    }
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
      engine.release(ref);
      forgetPod(ref);
      return;
    }
    if (LeanStore.dropped(node) || LeanStore.dropped(allocated)) {
      String which = LeanStore.dropped(node) ? HamiAnnotations.ASSIGNED_NODE : HamiAnnotations.DEVICES_ALLOCATED;
      ignore(pod, ref, LeanStore.dropped(node) ? "(unreadable)" : node, allocated,
          "it is unreadable: " + which + " is longer than " + LeanStore.KEPT_POD_ANNOTATIONS.get(which) + " characters");
      return;
    }
    // The spec is what the pod was admitted and placed with; its annotations anybody may have written.
    String noDevices = askedForNoDevices(pod);
    if (noDevices != null) {
      ignore(pod, ref, node, allocated, noDevices);
      return;
    }
    PodGrant grant;
    try {
      grant = DeviceListCodec.decodeGrant(ref, node, allocated, names(pod.getSpec().getInitContainers()), names(pod.getSpec().getContainers()));
    } catch (IllegalArgumentException e) {
      ignore(pod, ref, node, allocated, "it is unreadable: " + e.getMessage());
      return;
    }
    if (initContainersDone(pod)) {
      grant = withoutInitContainers(grant);
    }
    boolean bound = bound(pod);
    Optional<PodGrant> held = engine.grant(ref);
    if (held.isPresent()) {
      if (held.get().equals(grant)) {
        return;
      }
      if (bound && grant.equals(withoutInitContainers(held.get()))) {
        String charged = engine.chargedQueue(ref).orElse(null);
        engine.release(ref);
        engine.restore(grant, charged);
        own(ref, uid);
        return;
      }
      // Edited after the scheduler wrote it, or an older copy of the pod: what was counted stays.
      ignore(pod, ref, node, allocated, "it differs from the grant the scheduler made, which stays counted");
      return;
    }
    if (!bound && reaped.contains(ref)) {
      return;
    }
    if (bound && !node.equals(pod.getSpec().getNodeName())) {
      ignore(pod, ref, node, allocated, "the pod is bound to node " + pod.getSpec().getNodeName());
      return;
    }
    Optional<String> unknown = unknownDevices(grant);
    if (unknown.isPresent()) {
      ignore(pod, ref, node, allocated, unknown.get());
      return;
    }
    Instant now = clock.instant();
    if (bound) {
      reaped.remove(ref);
      // It runs there: counting it is what keeps the card from being promised twice, whether or not the
      // card would take it now (cordoned, unhealthy, or over-committed by an older scheduler); and its
      // queue is charged for it whatever the queue's limit says now.
      engine.restore(grant, queues.apply(pod));
      own(ref, uid);
      overCommitted(grant).ifPresent(card -> LOG.warn("pod {} runs on {} with a grant that leaves card {} over its capacity; counted all the same", ref, node, card));
      firstSeen.putIfAbsent(ref, now);
      return;
    }
    if (!adopt) {
      ignore(pod, ref, node, allocated, "the pod is not bound there and this scheduler made no reservation for it");
      return;
    }
    Optional<Instant> time = reservationTime(pod, now);
    if (time.isEmpty() || !time.get().isAfter(now.minus(reservationTimeout))) {
      ignore(pod, ref, node, allocated, "the pod is not bound there and " + HamiAnnotations.ASSIGNED_TIME + " names no live reservation");
      return;
    }
    ReserveResult fits = engine.reserve(grant, queues.apply(pod));
    if (!fits.reserved()) {
      ignore(pod, ref, node, allocated, "it does not fit what is left: " + fits.message());
      return;
    }
    own(ref, uid);
    firstSeen.putIfAbsent(ref, now);
  }

  /** Records that the grant counted for {@code ref} is the pod {@code uid}'s (keeping whether the filter claimed it). */
  private void own(PodRef ref, @Nullable String uid) {
    owners.compute(ref, (k, o) -> o != null && o.filtered() && Objects.equals(o.uid(), uid) ? o : new Owner(uid, false));
  }

  /** Why the pod's spec holds no grant: it asks for no device, or its request is unreadable; null when it asks. */
  private @Nullable String askedForNoDevices(Pod pod) {
    try {
      return requests.asksForDevices(pod) ? null : "the pod asks for no " + schema.countResource();
    } catch (PodRequestException e) {
      return "the pod's request is unreadable: " + e.getMessage();
    }
  }

  /** A card of the grant whose counted usage now exceeds its capacity, if any. */
  private Optional<String> overCommitted(PodGrant grant) {
    Set<String> cards = new HashSet<>();
    grant.allContainers().forEach(c -> c.devices().forEach(d -> cards.add(d.uuid())));
    return engine.usage(grant.node()).stream()
        .flatMap(u -> u.devices().stream())
        .filter(d -> cards.contains(d.device().uuid()))
        .filter(d -> d.usedMemoryMiB() > d.device().memoryMiB() || d.usedCores() > d.device().cores() || d.sharers() > d.device().splitCount())
        .map(d -> d.device().uuid())
        .findFirst();
  }

  /** Why the grant's node or devices do not exist, as the node's own registration says; empty when they do. */
  private Optional<String> unknownDevices(PodGrant grant) {
    Optional<Node> node = node(grant.node());
    if (node.isEmpty()) {
      return Optional.of("the node does not exist");
    }
    String register = annotations(node.get().getMetadata().getAnnotations()).get(HamiAnnotations.NODE_REGISTER);
    Set<String> uuids = new HashSet<>();
    try {
      if (register != null) {
        NodeRegisterCodec.decode(register).forEach(d -> uuids.add(d.uuid()));
      }
    } catch (IllegalArgumentException e) {
      return Optional.of("the node's " + HamiAnnotations.NODE_REGISTER + " is unreadable");
    }
    Optional<String> missing =
        Stream.concat(grant.initContainers().stream(), grant.containers().stream())
            .flatMap(c -> c.devices().stream())
            .map(DeviceGrant::uuid)
            .filter(uuid -> !uuids.contains(uuid))
            .findFirst();
    if (missing.isPresent()) {
      return Optional.of("device " + missing.get() + " is not registered on the node");
    }
    return Optional.empty();
  }

  /** Reports an ignored grant once per pod and annotation: a log line and a Warning Event on the pod. */
  private void ignore(Pod pod, PodRef ref, String node, String allocated, String why) {
    String message = "ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node " + node + ": " + why;
    String signature = allocated + '|' + message;
    if (signature.equals(ignored.put(ref, signature))) {
      return;
    }
    LOG.warn("pod {}: {}", ref, message);
    events.warning(pod, "GrantIgnored", message);
  }

  private void forgetPod(PodRef ref) {
    owners.remove(ref);
    reaped.remove(ref);
    firstSeen.remove(ref);
    ignored.remove(ref);
  }

  private static PodGrant withoutInitContainers(PodGrant grant) {
    List<ContainerGrant> init = grant.initContainers().stream().map(c -> ContainerGrant.empty(c.name())).toList();
    return new PodGrant(grant.pod(), grant.node(), init, grant.containers());
  }

  /** Whether the pod has init containers and every one finished successfully. */
  private static boolean initContainersDone(Pod pod) {
    List<Container> init = pod.getSpec() == null ? null : pod.getSpec().getInitContainers();
    if (init == null || init.isEmpty() || pod.getStatus() == null) {
      return false;
    }
    List<ContainerStatus> statuses = pod.getStatus().getInitContainerStatuses();
    if (statuses == null || statuses.size() != init.size()) {
      return false;
    }
    for (ContainerStatus s : statuses) {
      if (s.getState() == null || s.getState().getTerminated() == null || s.getState().getTerminated().getExitCode() != 0) {
        return false;
      }
    }
    return true;
  }

  private static List<String> names(@Nullable List<Container> containers) {
    return containers == null ? List.of() : containers.stream().map(Container::getName).toList();
  }

  /**
   * Brings one pod's grant in line with the cache's current copy of the pod (see {@link #reconcileNode}).
   * Before the ledger has synced, every pod is one found at start.
   */
  private void reconcilePod(String namespace, String name) {
    reconcilePod(namespace, name, !synced);
  }

  private void reconcilePod(String namespace, String name, boolean adopt) {
    synchronized (podLock) {
      SharedIndexInformer<Pod> informer = pods;
      Pod pod = informer == null ? null : informer.getIndexer().getByKey(namespace + "/" + name);
      // Gone from the cache: its deletion event settles it (podDeleted), by its UID.
      if (pod != null) {
        trackPod(pod, adopt);
      }
    }
  }

  /**
   * A pod was deleted: the grant of its name is given back only if it is this pod's (by UID), and a
   * newer pod of the name already in the cache is looked at afresh.
   */
  private void podDeleted(String namespace, String name, @Nullable String uid) {
    synchronized (podLock) {
      PodRef ref = new PodRef(namespace, name);
      Owner owner = owners.get(ref);
      if (owner == null || owner.is(uid)) {
        engine.release(ref);
        forgetPod(ref);
      } else {
        LOG.debug("pod {} (uid {}) deleted: the grant of its name is pod uid {}'s, and stays", ref, uid, owner.uid());
      }
    }
    reconcilePod(namespace, name);
  }

  // --- Quotas

  /**
   * A namespace's limits are the tightest over its ResourceQuotas, so every quota holds; keys are
   * {@code limits.<memory resource>} and {@code limits.<cores resource>}.
   */
  private void refreshQuotas(String namespace) {
    long memory = QuotaLimits.UNLIMITED;
    long cores = QuotaLimits.UNLIMITED;
    SharedIndexInformer<ResourceQuota> informer = quotas;
    if (informer != null) {
      for (ResourceQuota quota : informer.getIndexer().list()) {
        if (!namespace.equals(quota.getMetadata().getNamespace()) || quota.getSpec() == null || quota.getSpec().getHard() == null) {
          continue;
        }
        memory = tighter(memory, quota.getSpec().getHard().get("limits." + schema.memoryResource()), quota);
        cores = tighter(cores, quota.getSpec().getHard().get("limits." + schema.coresResource()), quota);
      }
    }
    engine.setQuota(namespace, new QuotaLimits(memory, cores));
  }

  private static long tighter(long current, @Nullable Quantity value, ResourceQuota quota) {
    if (value == null) {
      return current;
    }
    long limit;
    try {
      limit = Quantity.getAmountInBytes(value).longValueExact();
    } catch (ArithmeticException | IllegalArgumentException e) {
      LOG.warn("ResourceQuota {}/{}: ignoring non-integer limit {}", quota.getMetadata().getNamespace(), quota.getMetadata().getName(), value);
      return current;
    }
    if (limit < 0) {
      return current;
    }
    return current == QuotaLimits.UNLIMITED ? limit : Math.min(current, limit);
  }

  private static Map<String, String> annotations(@Nullable Map<String, String> map) {
    return map == null ? Map.of() : map;
  }
}
