package io.vgpu.examples.throughput;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.deviceplugin.AdvertisedDevices;
import io.vgpu.k8s.deviceplugin.PodAllocator;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.scheduler.NodeLock;
import io.vgpu.nvidia.NvidiaContainerContract;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BiConsumer;
import tools.jackson.databind.node.ObjectNode;

/**
 * The kubelets of every node in one object, doing of kubelet's work only what the scheduler depends on:
 * when a pod is bound to a node, the device manager's Allocate, answered in-process by the node agent's
 * own {@link PodAllocator} of that node — the pod kubelet is starting found through the node's lock, its
 * entry taken from {@code hami.io/vgpu-devices-to-allocate}, the container contract computed, {@code
 * hami.io/bind-phase: success} written and the node lock released with {@link NodeLock}, exactly the API
 * calls a node agent makes — then the status update that reports the pod Running. No gRPC, no files
 * written for containers, no processes: a kubelet stand-in per node is a thread pool and a pod watch
 * each, which 5,000 nodes cannot afford on one machine, and the scheduler sees the same API traffic.
 *
 * <p>Pods of one node are allocated one at a time (the allocator is serialized per node, as kubelet
 * admits pods one by one); different nodes in parallel on a few threads.
 */
final class AllocatingKubelet implements AutoCloseable {
  private final KubernetesClient client;
  private final String countResource;
  private final PodAllocator.Preparer preparer;
  private final NodeLock locks;
  private final Map<String, PodAllocator> allocators = new ConcurrentHashMap<>();
  private final Set<String> admitted = ConcurrentHashMap.newKeySet();
  private final ExecutorService workers;
  /** The label of the pods this kubelet allocates: those of the benchmark's bursts. */
  static final String BURST_LABEL = "throughput-bench/burst";

  private final SharedIndexInformer<Pod> pods;
  private final BiConsumer<PodRef, String> onAllocated;

  /**
   * Starts following the pods.
   *
   * @param threads how many nodes allocate at once
   * @param onAllocated told each pod allocated and started (error empty) or refused (the error)
   */
  AllocatingKubelet(KubernetesClient client, DeviceConfig config, int threads, BiConsumer<PodRef, String> onAllocated) {
    this.client = client;
    this.countResource = config.schema().countResource();
    NvidiaContainerContract contract = new NvidiaContainerContract(config.contractSettings());
    this.preparer = PodAllocator.contractOnly(contract);
    this.locks = new NodeLock(client, Duration.ofMinutes(5), Clock.systemUTC());
    this.onAllocated = onAllocated;
    this.workers = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "bench-kubelet");
      t.setDaemon(true);
      return t;
    });
    // Only the pods of the bursts: the running pods of a large cluster would cost this JVM (which also
    // serves the API) a full copy of each, and the scheduler's start-up the API server's time.
    this.pods = client.pods().inAnyNamespace().withLabel(BURST_LABEL).inform(new ResourceEventHandler<>() {
      @Override
      public void onAdd(Pod pod) {
        consider(pod);
      }

      @Override
      public void onUpdate(Pod before, Pod after) {
        consider(after);
      }

      @Override
      public void onDelete(Pod pod, boolean finalStateUnknown) {
        admitted.remove(pod.getMetadata().getUid());
      }
    }, 0);
  }

  /** A pod bound to a node, with its handshake open and not yet admitted, goes to its node's allocator. */
  private void consider(Pod pod) {
    String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
    if (node == null || node.isEmpty() || pod.getStatus() != null && "Running".equals(pod.getStatus().getPhase())) {
      return;
    }
    if (!"allocating".equals(PodRefs.annotations(pod).get(HamiAnnotations.BIND_PHASE)) || !admitted.add(pod.getMetadata().getUid())) {
      return;
    }
    workers.execute(() -> admit(node, pod));
  }

  private void admit(String node, Pod pod) {
    PodRef ref = PodRefs.of(pod);
    PodAllocator allocator = allocators.computeIfAbsent(node, n -> new PodAllocator(client, n, preparer, locks, true));
    try {
      allocator.allocate(request(pod));
      markRunning(ref);
      onAllocated.accept(ref, "");
    } catch (PodAllocator.AllocationException | RuntimeException e) {
      onAllocated.accept(ref, String.valueOf(e.getMessage()));
    }
  }

  /**
   * kubelet's Allocate request for the pod: one container request per container that asks for the
   * device resource, with as many replica IDs as it asks for — those of the granted cards, which is
   * what GetPreferredAllocation steers kubelet to.
   */
  private AllocateRequest request(Pod pod) {
    List<List<DeviceGrant>> entries = DeviceListCodec.decode(PodRefs.annotations(pod).getOrDefault(HamiAnnotations.DEVICES_TO_ALLOCATE, ""));
    AllocateRequest.Builder request = AllocateRequest.newBuilder();
    int entry = 0;
    for (Container c : PodRefs.containers(pod)) {
      int count = count(c);
      if (count == 0) {
        continue;
      }
      while (entry < entries.size() && entries.get(entry).isEmpty()) {
        entry++;
      }
      List<String> ids = new ArrayList<>();
      List<DeviceGrant> cards = entry < entries.size() ? entries.get(entry) : List.of();
      for (int i = 0; i < count; i++) {
        ids.add(AdvertisedDevices.replicaId(i < cards.size() ? cards.get(i).uuid() : "unknown", 0));
      }
      entry++;
      request.addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(ids));
    }
    return request.build();
  }

  private int count(Container c) {
    if (c.getResources() == null || c.getResources().getLimits() == null) {
      return 0;
    }
    Quantity q = c.getResources().getLimits().get(countResource);
    return q == null ? 0 : Quantity.getAmountInBytes(q).intValue();
  }

  /** The status update kubelet sends once the containers started. */
  private void markRunning(PodRef ref) {
    String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode status = patch.putObject("status");
    status.put("phase", "Running");
    status.put("startTime", now);
    var conditions = status.putArray("conditions");
    for (String type : List.of("Initialized", "Ready", "ContainersReady")) {
      conditions.addObject().put("type", type).put("status", "True").put("lastTransitionTime", now);
    }
    try {
      client.pods().inNamespace(ref.namespace()).withName(ref.name()).subresource("status").patch(PatchContext.of(PatchType.STRATEGIC_MERGE), patch.toString());
    } catch (KubernetesClientException e) {
      // the pod runs all the same; its status is reported again by a real kubelet
    }
  }

  @Override
  public void close() {
    pods.close();
    workers.shutdownNow();
  }
}
