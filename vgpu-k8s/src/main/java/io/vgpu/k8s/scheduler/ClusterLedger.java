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
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the engine's ledger in step with the cluster through informers on pods, nodes and resource
 * quotas. Nothing is persisted: on start the ledger is rebuilt from what the API server holds — nodes'
 * {@code hami.io/node-nvidia-register} annotations and pods' {@code hami.io/vgpu-devices-allocated} —
 * so a restarted scheduler neither loses nor duplicates a grant.
 *
 * <p>Pods that finished release their grant; pods being deleted keep it until they are gone; a pod whose
 * init containers all completed shrinks to its app containers' usage.
 */
public final class ClusterLedger implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterLedger.class);

  private final KubernetesClient client;
  private final Engine engine;
  private final ResourceSchema schema;
  private final Predicate<Node> nodeFilter;
  private final NodeHealth health;
  /** Pods whose reservation the stale-reservation reaper returned, keyed to the vgpu-time it had. */
  private final Map<PodRef, String> reaped = new ConcurrentHashMap<>();
  /** Register annotations last seen per node, so an unchanged node is not re-registered. */
  private final Map<String, String> registered = new ConcurrentHashMap<>();
  private final Set<String> warnedNodes = ConcurrentHashMap.newKeySet();
  private final List<SharedIndexInformer<?>> informers = new ArrayList<>();
  private final Object nodeLock = new Object();
  private final Object podLock = new Object();
  private @Nullable SharedIndexInformer<Pod> pods;
  private @Nullable SharedIndexInformer<Node> nodes;
  private @Nullable SharedIndexInformer<ResourceQuota> quotas;
  private volatile boolean synced;

  /**
   * A ledger that follows the cluster once {@link #start} is called.
   *
   * @param nodeFilter which nodes to register (the scheduler's {@code --node-label-selector})
   */
  public ClusterLedger(KubernetesClient client, Engine engine, Predicate<Node> nodeFilter, NodeHealth health) {
    this.client = client;
    this.engine = engine;
    this.schema = engine.config().schema();
    this.nodeFilter = nodeFilter;
    this.health = health;
  }

  /**
   * Starts the informers and blocks until their caches are filled and the ledger rebuilt.
   *
   * @return how long the rebuild took
   * @throws IllegalStateException when the caches do not fill within {@code timeout}
   */
  public Duration start(Duration timeout) {
    long start = System.nanoTime();
    nodes = client.nodes().runnableInformer(0);
    nodes.addEventHandler(new NodeHandler());
    quotas = client.resourceQuotas().inAnyNamespace().runnableInformer(0);
    quotas.addEventHandler(new QuotaHandler());
    pods = client.pods().inAnyNamespace().runnableInformer(0);
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
    for (Node node : nodes.getIndexer().list()) {
      reconcileNode(node.getMetadata().getName());
    }
    for (ResourceQuota quota : quotas.getIndexer().list()) {
      refreshQuotas(quota.getMetadata().getNamespace());
    }
    for (Pod pod : pods.getIndexer().list()) {
      reconcilePod(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    }
    synced = true;
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    LOG.info("ledger rebuilt from the cluster in {} ms: {} nodes, {} grants", took.toMillis(), engine.nodeNames().size(), engine.grants().size());
    return took;
  }

  /** Whether the caches are filled and the ledger reflects the cluster. */
  public boolean synced() {
    return synced;
  }

  /** A pod from the informer cache. */
  public Optional<Pod> pod(PodRef ref) {
    SharedIndexInformer<Pod> informer = pods;
    return informer == null ? Optional.empty() : Optional.ofNullable(informer.getIndexer().getByKey(ref.namespace() + "/" + ref.name()));
  }

  /** A node from the informer cache. */
  public Optional<Node> node(String name) {
    SharedIndexInformer<Node> informer = nodes;
    return informer == null ? Optional.empty() : Optional.ofNullable(informer.getIndexer().getByKey(name));
  }

  /** Every node in the informer cache. */
  public List<Node> nodes() {
    SharedIndexInformer<Node> informer = nodes;
    return informer == null ? List.of() : informer.getIndexer().list();
  }

  /** Every pod in the informer cache. */
  public List<Pod> pods() {
    SharedIndexInformer<Pod> informer = pods;
    return informer == null ? List.of() : informer.getIndexer().list();
  }

  /**
   * Returns a reservation the pod no longer needs held (filtered but never bound). The pod's grant
   * comes back if it is bound later or filtered again.
   */
  public void reap(PodRef pod, String assignedTime) {
    synchronized (podLock) {
      reaped.put(pod, assignedTime);
      engine.release(pod);
    }
  }

  /** Re-evaluates a node's registration and health (the periodic register pass). */
  public void refreshNode(Node node) {
    reconcileNode(node.getMetadata().getName());
  }

  @Override
  public void close() {
    informers.forEach(SharedIndexInformer::close);
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
    String signature = register + '|' + annotations.getOrDefault(HamiAnnotations.DEVICE_CORDON, "");
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
    }

    @Override
    public void onDelete(Node node, boolean finalStateUnknown) {
      reconcileNode(node.getMetadata().getName());
    }
  }

  // --- Pods

  private void trackPod(Pod pod) {
    PodRef ref = new PodRef(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    Map<String, String> annotations = annotations(pod.getMetadata().getAnnotations());
    String node = annotations.get(HamiAnnotations.ASSIGNED_NODE);
    String allocated = annotations.get(HamiAnnotations.DEVICES_ALLOCATED);
    if (node == null || allocated == null) {
      return;
    }
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
      engine.release(ref);
      reaped.remove(ref);
      return;
    }
    String time = annotations.getOrDefault(HamiAnnotations.ASSIGNED_TIME, "");
    String reapedAt = reaped.get(ref);
    if (reapedAt != null) {
      boolean bound = pod.getSpec() != null && pod.getSpec().getNodeName() != null;
      if (reapedAt.equals(time) && !bound) {
        return;
      }
      reaped.remove(ref);
    }
    PodGrant grant;
    try {
      grant = DeviceListCodec.decodeGrant(ref, node, allocated, names(pod.getSpec().getInitContainers()), names(pod.getSpec().getContainers()));
    } catch (IllegalArgumentException e) {
      LOG.warn("pod {}: ignoring unreadable {}: {}", ref, HamiAnnotations.DEVICES_ALLOCATED, e.getMessage());
      return;
    }
    if (initContainersDone(pod)) {
      grant = withoutInitContainers(grant);
    }
    Optional<PodGrant> held = engine.grant(ref);
    if (held.isPresent()) {
      if (held.get().equals(grant)) {
        return;
      }
      engine.release(ref);
    }
    engine.restore(grant);
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

  /** Brings one pod's grant in line with the cache's current copy of the pod (see {@link #reconcileNode}). */
  private void reconcilePod(String namespace, String name) {
    synchronized (podLock) {
      SharedIndexInformer<Pod> informer = pods;
      Pod pod = informer == null ? null : informer.getIndexer().getByKey(namespace + "/" + name);
      if (pod == null) {
        PodRef ref = new PodRef(namespace, name);
        engine.release(ref);
        reaped.remove(ref);
      } else {
        trackPod(pod);
      }
    }
  }

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
      reconcilePod(pod.getMetadata().getNamespace(), pod.getMetadata().getName());
    }
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

  private final class QuotaHandler implements ResourceEventHandler<ResourceQuota> {
    @Override
    public void onAdd(ResourceQuota quota) {
      refreshQuotas(quota.getMetadata().getNamespace());
    }

    @Override
    public void onUpdate(ResourceQuota old, ResourceQuota quota) {
      refreshQuotas(quota.getMetadata().getNamespace());
    }

    @Override
    public void onDelete(ResourceQuota quota, boolean finalStateUnknown) {
      refreshQuotas(quota.getMetadata().getNamespace());
    }
  }

  private static Map<String, String> annotations(@Nullable Map<String, String> map) {
    return map == null ? Map.of() : map;
  }
}
