package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClass;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import io.vgpu.examples.lab.apiserver.EventWriter;
import io.vgpu.k8s.deviceplugin.KubeletPlugin;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.Empty;
import io.vgpu.k8s.deviceplugin.v1beta1.RegisterRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.RegistrationGrpc;
import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import tools.jackson.databind.node.ObjectNode;

/**
 * The lab's kubelet of one node: it serves the device plugin Registration service on {@code
 * kubelet.sock}, follows each registered plugin's ListAndWatch and reports the healthy devices as the
 * node's capacity, and runs the pods bound to its node — device allocation through the plugin
 * (GetPreferredAllocation, Allocate, PreStartContainer), then each container as a process of the lab's
 * {@link ContainerRuntime}, with pod status and container statuses kept up to date and the pod's
 * restart policy honoured. It also serves kubelet's PodResources API ({@link PodResourcesServer}) on the
 * node's pod-resources socket.
 */
public final class KubeletStandIn implements AutoCloseable {
  /** The node's and every pod's address in the lab: loopback. */
  public static final String LAB_ADDRESS = "127.0.0.1";
  private final String node;
  private final Path pluginDirectory;
  private final KubernetesClient client;
  private final PodRunner runner;
  private final EventWriter events;
  private final Map<String, DevicePluginClient> plugins = new ConcurrentHashMap<>();
  private final Map<String, PodWorker> workers = new ConcurrentHashMap<>();
  private final Set<String> allocated = ConcurrentHashMap.newKeySet();
  private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "lab-kubelet");
    t.setDaemon(true);
    return t;
  });
  private final Server registration;
  private final SharedIndexInformer<Pod> pods;
  private final SharedIndexInformer<ConfigMap> configMaps;
  private final AtomicLong configMapChanges = new AtomicLong();
  private final NodePaths paths;
  private final ClusterAccess access;
  private final Path podsDirectory;
  private final PodResourcesServer podResources;
  private volatile int registrations;
  private volatile Map<String, Integer> reportedCapacity = Map.of();

  /**
   * Starts the kubelet of a node.
   *
   * @param runner how this node turns a container into a process
   * @param paths where the node's paths lie in the lab
   * @param podsDirectory kubelet's pods directory on the node, where each pod's volumes are made
   * @param access how pods reach the API server
   * @param podResourcesSocket where kubelet serves its PodResources API
   */
  public KubeletStandIn(String node, Path pluginDirectory, KubernetesClient client, PodRunner runner, NodePaths paths, Path podsDirectory, ClusterAccess access,
      Path podResourcesSocket) throws IOException {
    this.node = node;
    this.paths = paths;
    this.podsDirectory = podsDirectory;
    this.access = access;
    this.pluginDirectory = pluginDirectory;
    this.client = client;
    this.runner = runner;
    this.events = new EventWriter(client, "kubelet");
    this.registration = UnixSockets.serve(pluginDirectory.resolve(KubeletPlugin.KUBELET_SOCKET), new RegistrationGrpc.RegistrationImplBase() {
      @Override
      public void register(RegisterRequest request, StreamObserver<Empty> response) {
        response.onNext(Empty.getDefaultInstance());
        response.onCompleted();
        executor.execute(() -> connect(request));
      }
    });
    this.podResources = new PodResourcesServer(podResourcesSocket, () -> PodResourcesServer.of(workers.values()), this::allocatableDevices);
    // ConfigMaps before pods, so a pod's first start finds the ones that exist
    this.configMaps = client.configMaps().inAnyNamespace().inform(new ResourceEventHandler<>() {
      @Override
      public void onAdd(ConfigMap c) {
        configMapChanges.incrementAndGet();
      }

      @Override
      public void onUpdate(ConfigMap before, ConfigMap after) {
        configMapChanges.incrementAndGet();
      }

      @Override
      public void onDelete(ConfigMap c, boolean finalStateUnknown) {
        configMapChanges.incrementAndGet();
      }
    }, 0);
    this.pods = client.pods().inAnyNamespace().inform(new ResourceEventHandler<>() {
      @Override
      public void onAdd(Pod pod) {
        sync(pod);
      }

      @Override
      public void onUpdate(Pod before, Pod after) {
        sync(after);
      }

      @Override
      public void onDelete(Pod pod, boolean finalStateUnknown) {
        PodWorker worker = workers.remove(pod.getMetadata().getUid());
        if (worker != null) {
          executor.execute(worker::delete);
        }
      }
    }, 0);
  }

  /** The node. */
  public String node() {
    return node;
  }

  /** How many times a plugin registered (the node agent's readiness, as kubelet sees it). */
  public int registrations() {
    return registrations;
  }

  /** Whether a plugin for the resource is registered and serving its device list. */
  public boolean serving(String resourceName) {
    DevicePluginClient plugin = plugins.get(resourceName);
    return plugin != null && plugin.serving();
  }

  /** The pods this kubelet runs, by UID. */
  public Map<String, PodWorker> workers() {
    return Map.copyOf(workers);
  }

  /** The worker of a pod UID, also after the pod was deleted while its containers still stop. */
  public Optional<PodWorker> worker(String uid) {
    return Optional.ofNullable(workers.get(uid));
  }

  private void connect(RegisterRequest request) {
    DevicePluginClient previous = plugins.get(request.getResourceName());
    DevicePluginClient[] self = new DevicePluginClient[1];
    DevicePluginClient plugin =
        new DevicePluginClient(pluginDirectory.resolve(request.getEndpoint()), request.getResourceName(), request.getOptions(), () -> {
          if (self[0] != null) {
            reportCapacity();
          }
        });
    self[0] = plugin;
    plugins.put(request.getResourceName(), plugin);
    if (previous != null) {
      previous.close();
    }
    registrations++;
    reportCapacity();
  }

  /** Node capacity and allocatable of every plugin resource: its healthy devices (0 while disconnected). */
  private synchronized void reportCapacity() {
    Map<String, Integer> capacity = new LinkedHashMap<>();
    plugins.forEach((resource, plugin) -> capacity.put(resource,
        plugin.serving() ? (int) plugin.devices().values().stream().filter(h -> h).count() : 0));
    if (capacity.equals(reportedCapacity)) {
      return;
    }
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode status = patch.putObject("status");
    ObjectNode cap = status.putObject("capacity");
    ObjectNode alloc = status.putObject("allocatable");
    capacity.forEach((k, v) -> {
      cap.put(k, Integer.toString(v));
      alloc.put(k, Integer.toString(v));
    });
    try {
      client.nodes().withName(node).subresource("status").patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
      reportedCapacity = capacity;
    } catch (KubernetesClientException e) {
      // reported at the next change
    }
  }

  private void sync(Pod pod) {
    if (pod.getSpec() == null || !node.equals(pod.getSpec().getNodeName())) {
      return;
    }
    String uid = pod.getMetadata().getUid();
    if (workers.containsKey(uid)) {
      return;
    }
    PodWorker worker = new PodWorker(pod, this);
    if (workers.putIfAbsent(uid, worker) == null) {
      executor.execute(worker::run);
    }
  }

  // --- What pod workers use

  KubernetesClient client() {
    return client;
  }

  PodRunner runner() {
    return runner;
  }

  EventWriter events() {
    return events;
  }

  /** How many times a ConfigMap was added, changed or deleted: a container waiting for one tries again after a change. */
  long configMapChanges() {
    return configMapChanges.get();
  }

  /** The ConfigMaps as kubelet's watch-based cache holds them. */
  ContainerEnvironment.ConfigMaps configMaps() {
    return (namespace, name) -> Optional.ofNullable(configMaps.getIndexer().getByKey(namespace + "/" + name))
        .map(c -> Optional.ofNullable(c.getData()).orElse(Map.of()));
  }

  /** What the downward API reads of a pod on this node besides its object. */
  ContainerEnvironment.PodPlace place() {
    return new ContainerEnvironment.PodPlace(node, LAB_ADDRESS, LAB_ADDRESS);
  }

  /** How pods reach the API server. */
  ClusterAccess access() {
    return access;
  }

  /** The volumes of a pod on this node. */
  PodVolumes volumes(Pod pod) {
    return new PodVolumes(podsDirectory.resolve(pod.getMetadata().getUid()), paths, configMaps(), access, place());
  }

  /**
   * The runtime a pod's RuntimeClass names, as kubelet looks it up before it creates the pod's sandbox:
   * NVIDIA's, the node's default, when it names none.
   *
   * @throws SandboxException when the RuntimeClass does not exist or names a handler the node lacks
   */
  RuntimeHandler runtimeHandler(Pod pod) throws SandboxException {
    String className = pod.getSpec().getRuntimeClassName();
    if (className == null || className.isEmpty()) {
      return RuntimeHandler.NVIDIA;
    }
    RuntimeClass runtimeClass;
    try {
      runtimeClass = client.resources(RuntimeClass.class).withName(className).get();
    } catch (KubernetesClientException e) {
      throw new SandboxException("failed to lookup RuntimeClass " + className + ": " + e.getMessage());
    }
    if (runtimeClass == null) {
      throw new SandboxException("failed to lookup RuntimeClass " + className + ": runtimeclass.node.k8s.io \"" + className + "\" not found");
    }
    String handler = Optional.ofNullable(runtimeClass.getHandler()).orElse("");
    return RuntimeHandler.named(handler).orElseThrow(() -> new SandboxException(
        "rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for \"" + handler + "\" is configured"));
  }

  /** A pod sandbox kubelet cannot create: the pod stays Pending, {@code FailedCreatePodSandBox}, and kubelet tries again. */
  static final class SandboxException extends Exception {
    private static final long serialVersionUID = 1L;

    SandboxException(String message) {
      super(message);
    }
  }

  /**
   * Picks and allocates devices of a resource for one container, as kubelet's device manager does:
   * healthy devices not allocated to another container, the plugin's preference among them.
   *
   * @return the chosen IDs and the plugin's answer
   * @throws IllegalStateException when the plugin is missing or has too few devices
   */
  synchronized Allocation allocate(String resource, int count) {
    DevicePluginClient plugin = plugins.get(resource);
    if (plugin == null || !plugin.serving()) {
      throw new IllegalStateException("no device plugin serves " + resource + " on node " + node);
    }
    List<String> available = new ArrayList<>();
    plugin.devices().forEach((id, healthy) -> {
      if (healthy && !allocated.contains(id)) {
        available.add(id);
      }
    });
    if (available.size() < count) {
      throw new IllegalStateException("requested " + count + " of " + resource + ", but only " + available.size() + " are available on node " + node);
    }
    List<String> ids = plugin.preferred(available, count);
    var response = plugin.allocate(ids);
    allocated.addAll(ids);
    return new Allocation(ids, response, plugin);
  }

  /**
   * One container's devices.
   *
   * @param ids the device IDs
   * @param response the plugin's Allocate answer
   * @param plugin the plugin
   */
  record Allocation(List<String> ids, ContainerAllocateResponse response, DevicePluginClient plugin) {}

  /** PreStartContainer on the plugin that serves these devices, when it asks for it. */
  void allocatePreStart(List<String> ids) {
    for (DevicePluginClient plugin : plugins.values()) {
      List<String> own = ids.stream().filter(plugin.devices()::containsKey).toList();
      if (!own.isEmpty()) {
        plugin.preStart(own);
      }
    }
  }

  /** The extended resources device plugins serve on this node. */
  Set<String> deviceResources() {
    return Set.copyOf(plugins.keySet());
  }

  /** The healthy devices of every plugin resource, as PodResources' GetAllocatableResources lists them. */
  private Map<String, List<String>> allocatableDevices() {
    Map<String, List<String>> out = new LinkedHashMap<>();
    plugins.forEach((resource, plugin) -> {
      if (plugin.serving()) {
        out.put(resource, plugin.devices().entrySet().stream().filter(Map.Entry::getValue).map(Map.Entry::getKey).toList());
      }
    });
    return out;
  }

  /** Gives devices back when their pod is gone. */
  void release(Collection<String> ids) {
    allocated.removeAll(new HashSet<>(ids));
  }

  void forget(String uid, PodWorker worker) {
    workers.remove(uid, worker);
  }

  @Override
  public void close() {
    pods.close();
    configMaps.close();
    List<PodWorker> all = new ArrayList<>(workers.values());
    workers.clear();
    all.parallelStream().forEach(PodWorker::delete);
    executor.shutdownNow();
    registration.shutdownNow();
    podResources.close();
    plugins.values().forEach(DevicePluginClient::close);
  }

  /** Turns a pod's container into a process on this node. */
  public interface PodRunner {
    /**
     * Starts a container.
     *
     * @param pod the pod
     * @param container the container's name
     * @param launch what kubelet made of the container's spec and the device plugin's answer
     */
    RunningContainer start(Pod pod, String container, Launch launch) throws IOException;
  }

  /**
   * What kubelet hands the runtime for one container.
   *
   * @param env the container's environment as kubelet resolved it from the pod spec (ConfigMaps,
   *     downward API, {@code $(VAR)} expanded, the service variables), in definition order
   * @param allocatedEnv what the device plugin's Allocate added to it
   * @param mounts the device plugin's mounts, then the container's volume mounts
   * @param runtime the runtime the pod's RuntimeClass names (NVIDIA's when it names none)
   */
  public record Launch(Map<String, String> env, Map<String, String> allocatedEnv, List<ContainerSpec.Mount> mounts, RuntimeHandler runtime) {
    /** Copies the collections, keeping their order. */
    public Launch {
      env = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(env));
      allocatedEnv = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(allocatedEnv));
      mounts = List.copyOf(mounts);
    }
  }
}
