package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerState;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeSpec;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.kai.KaiKeys;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An informer's store that keeps of each object only what the scheduler reads. A pod as the API server
 * serves it is 5 KB or more of JSON (managed fields, volumes, environment, status), and the informer
 * would hold all of it for every pod in the cluster, while the ledger reads a pod's name, its grant
 * annotations, its node, its containers' names and resources and its phase. A store made by {@link
 * #pods} or {@link #nodes} copies each object it is given into that shape (the informer's handlers
 * still receive the object as it arrived); the ledger's stores ({@link #decodedPods}, {@link
 * #decodedNodes}) are given objects a {@link LeanReader} read in that shape to begin with, and keep them
 * as they are.
 *
 * <p>Pods keep only the annotations and labels the scheduler reads ({@link #KEPT_POD_ANNOTATIONS}, {@link
 * #KEPT_POD_LABELS}: a label over its bound is not kept), each up to
 * a length no value the scheduler wrote reaches: a pod's annotations are its owner's to write, up to
 * 256 KiB a pod. A longer value is replaced by {@link #DROPPED} with one WARN, and readers treat it as
 * unreadable. Nodes keep all their annotations and labels (node agents and administrators write them,
 * and they are few).
 *
 * @param <T> the kind of object
 */
final class LeanStore<T extends HasMetadata> implements ItemStore<T> {
  private static final Logger LOG = LoggerFactory.getLogger(LeanStore.class);
  private static final String CPU = "cpu";

  /** What a kept annotation longer than its bound is replaced with: a value no reader accepts. */
  static final String DROPPED = "<dropped: over the length the scheduler keeps>";

  /** The longest device list kept: 512 entries of 64 characters (a card's UUID, vendor, MiB and cores). */
  static final int MAX_DEVICE_LIST = 512 * 64;

  /**
   * The pod annotations the scheduler reads from its cache, with the longest value kept of each: a
   * node name (a DNS subdomain), unix seconds, a device list.
   */
  static final Map<String, Integer> KEPT_POD_ANNOTATIONS =
      Map.of(
          HamiAnnotations.ASSIGNED_NODE, 253,
          HamiAnnotations.ASSIGNED_TIME, 20,
          HamiAnnotations.DEVICES_ALLOCATED, MAX_DEVICE_LIST,
          // KAI's dialect: the gang (an object name), the portion (a decimal, MiB, a count, a container
          // name) and why the pod waits (one line the scheduler wrote)
          KaiKeys.POD_GROUP_NAME, 253,
          KaiKeys.GPU_FRACTION, 64,
          KaiKeys.GPU_MEMORY, 32,
          KaiKeys.GPU_FRACTION_NUM_DEVICES, 16,
          KaiKeys.GPU_FRACTION_CONTAINER_NAME, 253,
          KaiKeys.WAITING_ANNOTATION, 2048);

  /** The pod labels the scheduler reads from its cache, with the longest value kept (a label value is at most 63). */
  static final Map<String, Integer> KEPT_POD_LABELS = Map.of(KaiKeys.QUEUE_LABEL, 63);

  private final Map<String, T> items = new ConcurrentHashMap<>();
  private final BiFunction<String, T, T> lean;
  private final @Nullable Set<String> warned;

  private LeanStore(BiFunction<String, T, T> lean, @Nullable Set<String> warned) {
    this.lean = lean;
    this.warned = warned;
  }

  /**
   * A store of lean pods, which keep of their containers' resources the CPU and the vendor's device
   * resources of {@code schema}.
   */
  static LeanStore<Pod> pods(ResourceSchema schema) {
    Set<String> resources = podResources(schema);
    Set<String> warned = ConcurrentHashMap.newKeySet();
    return new LeanStore<>((key, pod) -> lean(pod, resources, (annotation, length) -> warnOversize(warned, key, annotation, length)), warned);
  }

  /**
   * A store of pods that arrive lean, read by {@link #reader(ResourceSchema)} (an informer whose client decodes with
   * {@link LeanDecoding}): each is kept as it comes, without a copy.
   */
  static LeanStore<Pod> decodedPods() {
    return new LeanStore<>((key, pod) -> pod, ConcurrentHashMap.newKeySet());
  }

  /**
   * The streaming reader of this store's pods ({@link LeanReader#forCache}): it keeps what {@link
   * #lean(Pod, Set, Oversize)} keeps, and warns of a dropped annotation once per pod as this store does.
   */
  LeanReader reader(ResourceSchema schema) {
    Set<String> warnings = Objects.requireNonNull(warned, "a store of nodes has no pod reader");
    return LeanReader.forCache(podResources(schema), (key, annotation, length) -> warnOversize(warnings, key, annotation, length));
  }

  /** A store of lean nodes. */
  static LeanStore<Node> nodes() {
    return new LeanStore<>((key, node) -> lean(node), null);
  }

  /** A store of nodes that arrive lean ({@link LeanReader}): each is kept as it comes. */
  static LeanStore<Node> decodedNodes() {
    return new LeanStore<>((key, node) -> node, null);
  }

  /** The container resources a lean pod keeps: the CPU and the vendor's device resources. */
  static Set<String> podResources(ResourceSchema schema) {
    Set<String> resources = new HashSet<>(List.of(CPU, schema.countResource(), schema.memoryResource(), schema.memoryPercentageResource(), schema.coresResource()));
    resources.remove("");
    return resources;
  }

  /** One WARN per pod and annotation, however often the pod is updated (forgotten with the pod). */
  private static void warnOversize(Set<String> warned, String key, String annotation, int length) {
    if (warned.add(key + "|" + annotation)) {
      LOG.warn("pod {}: annotation {} is {} characters, over the {} the scheduler keeps: treated as unreadable", key, annotation, length,
          KEPT_POD_ANNOTATIONS.get(annotation));
    }
  }

  /** Whether a kept annotation's value was dropped for its length. */
  static boolean dropped(@Nullable String value) {
    return DROPPED.equals(value);
  }

  @Override
  public String getKey(T item) {
    return Cache.metaNamespaceKeyFunc(item);
  }

  @Override
  public @Nullable T put(String key, T item) {
    return items.put(key, lean.apply(key, item));
  }

  @Override
  public @Nullable T remove(String key) {
    if (warned != null) {
      warned.removeIf(w -> w.startsWith(key + "|"));
    }
    return items.remove(key);
  }

  @Override
  public Stream<String> keySet() {
    return items.keySet().stream();
  }

  @Override
  public Stream<T> values() {
    return items.values().stream();
  }

  @Override
  public int size() {
    return items.size();
  }

  @Override
  public @Nullable T get(String key) {
    return items.get(key);
  }

  /** Told of each kept annotation dropped for its length: the annotation and the value's length. */
  @FunctionalInterface
  interface Oversize {
    void dropped(String annotation, int length);
  }

  /**
   * A pod with what the ledger, the extender and the CPU feed read: name, namespace, UID, resource
   * version, deletion time and the {@linkplain #KEPT_POD_ANNOTATIONS kept annotations}; node, its
   * containers and init containers with their names, the {@code resources} requested and limited,
   * and restart policies, and its CPU overhead; phase, and its init containers' termination codes.
   */
  static Pod lean(Pod pod, Set<String> resources, Oversize oversize) {
    Pod out = new Pod();
    out.setApiVersion(pod.getApiVersion());
    out.setKind(pod.getKind());
    out.setMetadata(meta(pod.getMetadata(), oversize));
    PodSpec spec = pod.getSpec();
    if (spec != null) {
      PodSpec s = new PodSpec();
      s.setNodeName(spec.getNodeName());
      s.setContainers(containers(spec.getContainers(), resources));
      s.setInitContainers(containers(spec.getInitContainers(), resources));
      s.setOverhead(only(spec.getOverhead(), Set.of(CPU)));
      out.setSpec(s);
    }
    PodStatus status = pod.getStatus();
    if (status != null) {
      PodStatus s = new PodStatus();
      s.setPhase(status.getPhase());
      if (status.getInitContainerStatuses() != null && !status.getInitContainerStatuses().isEmpty()) {
        List<ContainerStatus> init = new ArrayList<>();
        for (ContainerStatus c : status.getInitContainerStatuses()) {
          ContainerStatus lean = new ContainerStatus();
          lean.setName(c.getName());
          ContainerStateTerminated terminated = c.getState() == null ? null : c.getState().getTerminated();
          if (terminated != null) {
            ContainerStateTerminated t = new ContainerStateTerminated();
            t.setExitCode(terminated.getExitCode());
            ContainerState state = new ContainerState();
            state.setTerminated(t);
            lean.setState(state);
          }
          init.add(lean);
        }
        s.setInitContainerStatuses(init);
      }
      out.setStatus(s);
    }
    return withoutEmptyCollections(out);
  }

  /**
   * The pod with the collections fabric8's model allocates in every new object, empty and never read
   * here, set to {@code null}: some forty per lean pod, as much again as what it keeps, and at 50,000
   * pods most of the cache. The containers, init containers, overhead and init-container statuses the
   * readers look at stay as set.
   */
  static Pod withoutEmptyCollections(Pod pod) {
    pod.setAdditionalProperties(null);
    ObjectMeta meta = pod.getMetadata();
    if (meta != null) {
      meta.setAdditionalProperties(null);
      meta.setFinalizers(null);
      meta.setManagedFields(null);
      meta.setOwnerReferences(null);
      if (meta.getLabels() != null && meta.getLabels().isEmpty()) {
        meta.setLabels(null);
      }
      if (meta.getAnnotations() != null && meta.getAnnotations().isEmpty()) {
        meta.setAnnotations(null);
      }
    }
    PodSpec spec = pod.getSpec();
    if (spec != null) {
      spec.setAdditionalProperties(null);
      spec.setEphemeralContainers(null);
      spec.setEvictionResponders(null);
      spec.setHostAliases(null);
      spec.setImagePullSecrets(null);
      spec.setNodeSelector(null);
      spec.setReadinessGates(null);
      spec.setResourceClaims(null);
      spec.setSchedulingGates(null);
      spec.setTolerations(null);
      spec.setTopologySpreadConstraints(null);
      spec.setVolumes(null);
      for (List<Container> containers : Arrays.asList(spec.getContainers(), spec.getInitContainers())) {
        if (containers != null) {
          containers.forEach(LeanStore::withoutEmptyCollections);
        }
      }
    }
    PodStatus status = pod.getStatus();
    if (status != null) {
      status.setAdditionalProperties(null);
      status.setAllocatedResources(null);
      status.setConditions(null);
      status.setContainerStatuses(null);
      status.setEphemeralContainerStatuses(null);
      status.setHostIPs(null);
      status.setNodeAllocatableResourceClaimStatuses(null);
      status.setPodIPs(null);
      status.setResourceClaimStatuses(null);
      status.setVolumeHealth(null);
    }
    return pod;
  }

  static void withoutEmptyCollections(Container container) {
    container.setAdditionalProperties(null);
    container.setArgs(null);
    container.setCommand(null);
    container.setEnv(null);
    container.setEnvFrom(null);
    container.setPorts(null);
    container.setResizePolicy(null);
    container.setRestartPolicyRules(null);
    container.setVolumeDevices(null);
    container.setVolumeMounts(null);
  }

  /**
   * A node with what the ledger, the node handshake and the node lock read: name, resource version,
   * labels and annotations; whether it is unschedulable; its allocatable resources.
   */
  static Node lean(Node node) {
    Node out = new Node();
    out.setApiVersion(node.getApiVersion());
    out.setKind(node.getKind());
    out.setMetadata(meta(node.getMetadata(), null));
    if (node.getSpec() != null && node.getSpec().getUnschedulable() != null) {
      NodeSpec spec = new NodeSpec();
      spec.setUnschedulable(node.getSpec().getUnschedulable());
      out.setSpec(spec);
    }
    if (node.getStatus() != null && node.getStatus().getAllocatable() != null) {
      NodeStatus status = new NodeStatus();
      status.setAllocatable(new LinkedHashMap<>(node.getStatus().getAllocatable()));
      out.setStatus(status);
    }
    return out;
  }

  /** A copy of {@code meta} as a node's is kept: every annotation and label, in maps of its own. */
  static ObjectMeta copyOf(ObjectMeta meta) {
    return Objects.requireNonNull(meta(meta, null));
  }

  /** The metadata kept: a pod's kept annotations ({@code oversize} given), or a node's every annotation and label. */
  private static @Nullable ObjectMeta meta(@Nullable ObjectMeta meta, @Nullable Oversize oversize) {
    if (meta == null) {
      return null;
    }
    ObjectMeta out = new ObjectMeta();
    out.setName(meta.getName());
    out.setNamespace(meta.getNamespace());
    out.setUid(meta.getUid());
    out.setResourceVersion(meta.getResourceVersion());
    out.setDeletionTimestamp(meta.getDeletionTimestamp());
    out.setCreationTimestamp(meta.getCreationTimestamp());
    Map<String, String> annotations = meta.getAnnotations();
    if (annotations != null && !annotations.isEmpty()) {
      Map<String, String> kept = new LinkedHashMap<>();
      if (oversize == null) {
        kept.putAll(annotations);
      } else {
        KEPT_POD_ANNOTATIONS.forEach((key, max) -> {
          String value = annotations.get(key);
          if (value != null && value.length() > max) {
            oversize.dropped(key, value.length());
            kept.put(key, DROPPED);
          } else if (value != null) {
            kept.put(key, value);
          }
        });
      }
      out.setAnnotations(kept);
    }
    if (oversize == null && meta.getLabels() != null) {
      out.setLabels(new LinkedHashMap<>(meta.getLabels()));
    } else if (meta.getLabels() != null && !meta.getLabels().isEmpty()) {
      Map<String, String> kept = new LinkedHashMap<>();
      KEPT_POD_LABELS.forEach((key, max) -> {
        String value = meta.getLabels().get(key);
        if (value != null && value.length() <= max) {
          kept.put(key, value);
        }
      });
      if (!kept.isEmpty()) {
        out.setLabels(kept);
      }
    }
    return out;
  }

  /** Each container's name, restart policy and {@code resources} requested and limited ({@code PodCpu} counts the CPU). */
  private static @Nullable List<Container> containers(@Nullable List<Container> containers, Set<String> resources) {
    if (containers == null) {
      return null;
    }
    List<Container> out = new ArrayList<>(containers.size());
    for (Container c : containers) {
      Container lean = new Container();
      lean.setName(c.getName());
      lean.setRestartPolicy(c.getRestartPolicy());
      ResourceRequirements given = c.getResources();
      if (given != null) {
        Map<String, Quantity> requests = only(given.getRequests(), resources);
        Map<String, Quantity> limits = only(given.getLimits(), resources);
        if (requests != null || limits != null) {
          ResourceRequirements r = new ResourceRequirements();
          r.setRequests(requests);
          r.setLimits(limits);
          lean.setResources(r);
        }
      }
      out.add(lean);
    }
    return out;
  }

  private static @Nullable Map<String, Quantity> only(@Nullable Map<String, Quantity> given, Set<String> names) {
    if (given == null) {
      return null;
    }
    Map<String, Quantity> kept = null;
    for (Map.Entry<String, Quantity> e : given.entrySet()) {
      if (names.contains(e.getKey())) {
        if (kept == null) {
          kept = new LinkedHashMap<>(4);
        }
        kept.put(e.getKey(), e.getValue());
      }
    }
    return kept;
  }
}
