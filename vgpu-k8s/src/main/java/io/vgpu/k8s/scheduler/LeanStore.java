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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * An informer's store that keeps of each object only what the scheduler reads. A pod as the API server
 * serves it is 5 KB or more of JSON (managed fields, volumes, environment, status), and the informer
 * would hold all of it for every pod in the cluster, while the ledger reads a pod's name, its {@code
 * hami.io/} annotations, its node, its containers' names and its phase. Handlers still receive the
 * object as it arrived; what the store keeps, and so what {@code getByKey} and {@code list} return, is
 * the lean copy.
 *
 * <p>Only annotations under {@code hami.io/} are kept on pods: a pod's other annotations are written by
 * its owner and may be large, and the scheduler reads none of them. Nodes keep all their annotations
 * and labels (node agents and administrators write them, and they are few).
 *
 * @param <T> the kind of object
 */
final class LeanStore<T extends HasMetadata> implements ItemStore<T> {
  private static final String HAMI_PREFIX = "hami.io/";
  private static final String CPU = "cpu";

  private final Map<String, T> items = new ConcurrentHashMap<>();
  private final UnaryOperator<T> lean;

  private LeanStore(UnaryOperator<T> lean) {
    this.lean = lean;
  }

  /** A store of lean pods. */
  static LeanStore<Pod> pods() {
    return new LeanStore<>(LeanStore::lean);
  }

  /** A store of lean nodes. */
  static LeanStore<Node> nodes() {
    return new LeanStore<>(LeanStore::lean);
  }

  @Override
  public String getKey(T item) {
    return Cache.metaNamespaceKeyFunc(item);
  }

  @Override
  public @Nullable T put(String key, T item) {
    return items.put(key, lean.apply(item));
  }

  @Override
  public @Nullable T remove(String key) {
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

  /**
   * A pod with what the ledger, the extender and the CPU feed read: name, namespace, UID, resource
   * version, deletion time and {@code hami.io/} annotations; node, its containers and init containers
   * with their names, CPU requests and limits and restart policies, and its CPU overhead; phase, and
   * its init containers' termination codes.
   */
  static Pod lean(Pod pod) {
    Pod out = new Pod();
    out.setApiVersion(pod.getApiVersion());
    out.setKind(pod.getKind());
    out.setMetadata(meta(pod.getMetadata(), true));
    PodSpec spec = pod.getSpec();
    if (spec != null) {
      PodSpec s = new PodSpec();
      s.setNodeName(spec.getNodeName());
      s.setContainers(containers(spec.getContainers()));
      s.setInitContainers(containers(spec.getInitContainers()));
      s.setOverhead(cpuOnly(spec.getOverhead()));
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
  private static Pod withoutEmptyCollections(Pod pod) {
    pod.setAdditionalProperties(null);
    ObjectMeta meta = pod.getMetadata();
    if (meta != null) {
      meta.setAdditionalProperties(null);
      meta.setFinalizers(null);
      meta.setManagedFields(null);
      meta.setOwnerReferences(null);
      meta.setLabels(null);
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

  private static void withoutEmptyCollections(Container container) {
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
    out.setMetadata(meta(node.getMetadata(), false));
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

  private static @Nullable ObjectMeta meta(@Nullable ObjectMeta meta, boolean onlyHamiAnnotations) {
    if (meta == null) {
      return null;
    }
    ObjectMeta out = new ObjectMeta();
    out.setName(meta.getName());
    out.setNamespace(meta.getNamespace());
    out.setUid(meta.getUid());
    out.setResourceVersion(meta.getResourceVersion());
    out.setDeletionTimestamp(meta.getDeletionTimestamp());
    Map<String, String> annotations = meta.getAnnotations();
    if (annotations != null && !annotations.isEmpty()) {
      Map<String, String> kept = new LinkedHashMap<>();
      annotations.forEach((k, v) -> {
        if (!onlyHamiAnnotations || k.startsWith(HAMI_PREFIX)) {
          kept.put(k, v);
        }
      });
      out.setAnnotations(kept);
    }
    if (!onlyHamiAnnotations && meta.getLabels() != null) {
      out.setLabels(new LinkedHashMap<>(meta.getLabels()));
    }
    return out;
  }

  /** Each container's name, restart policy and CPU request and limit (what {@code PodCpu} counts). */
  private static @Nullable List<Container> containers(@Nullable List<Container> containers) {
    if (containers == null) {
      return null;
    }
    List<Container> out = new ArrayList<>(containers.size());
    for (Container c : containers) {
      Container lean = new Container();
      lean.setName(c.getName());
      lean.setRestartPolicy(c.getRestartPolicy());
      ResourceRequirements resources = c.getResources();
      if (resources != null) {
        Map<String, Quantity> requests = cpuOnly(resources.getRequests());
        Map<String, Quantity> limits = cpuOnly(resources.getLimits());
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

  private static @Nullable Map<String, Quantity> cpuOnly(@Nullable Map<String, Quantity> resources) {
    Quantity cpu = resources == null ? null : resources.get(CPU);
    return cpu == null ? null : Map.of(CPU, cpu);
  }

}
