package io.vgpu.k8s.deviceplugin;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.DeviceSpec;
import io.vgpu.k8s.deviceplugin.v1beta1.Mount;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationResponse;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.scheduler.NodeLock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Kubelet's Allocate, HAMi's way but without its guesswork: find the pod kubelet is starting (the
 * holder of the node's lock, else the oldest bound pod that still has containers to allocate), take
 * that pod's next container entry from {@code hami.io/vgpu-devices-to-allocate}, and answer with the
 * container contract for exactly those cards. When every container is served the pod's {@code
 * bind-phase} becomes {@code success} and the node lock is released; on any failure it becomes {@code
 * failed} and the lock is released too, so the node is never left locked.
 *
 * <p>Calls are serialized: kubelet allocates one container at a time, and the annotation update must
 * not race with itself.
 */
public final class PodAllocator {
  private static final Logger LOG = LoggerFactory.getLogger(PodAllocator.class);

  /** A refusal kubelet reports on the pod (it rejects the pod with an admission error). */
  public static final class AllocationException extends Exception {
    private static final long serialVersionUID = 1L;

    AllocationException(String message) {
      super(message);
    }
  }

  /** What a container gets, for kubelet and for the host. */
  @FunctionalInterface
  public interface Preparer {
    /**
     * Builds the container's allocation and prepares the host for it (directories, files).
     *
     * @throws AllocationException when the host cannot be prepared
     */
    ContainerContract.Allocation prepare(PodRef pod, String podUid, ContainerGrant grant, Map<String, String> containerEnv)
        throws AllocationException;
  }

  private final KubernetesClient client;
  private final String nodeName;
  private final Preparer preparer;
  private final NodeLock locks;
  private final boolean fieldSelector;

  /**
   * An allocator for one node.
   *
   * @param fieldSelector whether to list the node's pods with a {@code spec.nodeName} field selector
   *     (true against a real API server; the test server cannot evaluate it)
   */
  public PodAllocator(KubernetesClient client, String nodeName, Preparer preparer, NodeLock locks, boolean fieldSelector) {
    this.client = client;
    this.nodeName = nodeName;
    this.preparer = preparer;
    this.locks = locks;
    this.fieldSelector = fieldSelector;
  }

  /**
   * Serves one Allocate call: one response per container request, in order.
   *
   * @throws AllocationException when the pod or its entries cannot be found or do not match
   */
  public synchronized AllocateResponse allocate(AllocateRequest request) throws AllocationException {
    Pod pod = pendingPod();
    PodRef ref = PodRefs.of(pod);
    try {
      List<List<DeviceGrant>> entries = new ArrayList<>(DeviceListCodec.decode(toAllocate(pod)));
      List<Container> containers = PodRefs.containers(pod);
      AllocateResponse.Builder out = AllocateResponse.newBuilder();
      for (ContainerAllocateRequest container : request.getContainerRequestsList()) {
        int index = nextEntry(entries);
        if (index < 0) {
          throw new AllocationException("pod " + ref + " has no container left to allocate devices to");
        }
        List<DeviceGrant> devices = entries.get(index);
        if (devices.size() != container.getDevicesIdsCount()) {
          throw new AllocationException(
              "device number not matched: pod " + ref + " container " + index + " was granted " + devices.size()
                  + " devices, kubelet asks for " + container.getDevicesIdsCount());
        }
        Container manifest = index < containers.size() ? containers.get(index) : null;
        String name = manifest == null ? "container-" + index : manifest.getName();
        ContainerContract.Allocation allocation =
            preparer.prepare(ref, uid(pod), new ContainerGrant(name, devices), env(manifest));
        out.addContainerResponses(response(allocation));
        entries.set(index, List.of());
      }
      patchToAllocate(ref, DeviceListCodec.encode(entries.stream().map(d -> new ContainerGrant("", d)).toList()));
      if (nextEntry(entries) < 0) {
        finish(ref, "success");
      }
      return out.build();
    } catch (AllocationException | RuntimeException e) {
      finish(ref, "failed");
      throw e instanceof AllocationException a ? a : new AllocationException("allocating pod " + ref + ": " + e.getMessage());
    }
  }

  /**
   * Steers kubelet's choice of replica IDs to the cards the scheduler granted, so kubelet's own
   * bookkeeping agrees with the scheduler's. Falls back to kubelet's order when the pod is unknown.
   */
  public synchronized PreferredAllocationResponse preferred(PreferredAllocationRequest request) {
    List<List<DeviceGrant>> entries = List.of();
    try {
      entries = new ArrayList<>(DeviceListCodec.decode(toAllocate(pendingPod())));
    } catch (AllocationException | RuntimeException e) {
      LOG.debug("preferred allocation without a pending pod: {}", e.getMessage());
    }
    PreferredAllocationResponse.Builder out = PreferredAllocationResponse.newBuilder();
    int entry = 0;
    for (ContainerPreferredAllocationRequest container : request.getContainerRequestsList()) {
      Set<String> chosen = new LinkedHashSet<>(container.getMustIncludeDeviceIDsList());
      while (entry < entries.size() && entries.get(entry).isEmpty()) {
        entry++;
      }
      if (entry < entries.size()) {
        for (DeviceGrant card : entries.get(entry)) {
          if (chosen.size() >= container.getAllocationSize()) {
            break;
          }
          boolean taken = chosen.stream().anyMatch(id -> AdvertisedDevices.cardOf(id).equals(card.uuid()));
          if (!taken) {
            container.getAvailableDeviceIDsList().stream()
                .filter(id -> AdvertisedDevices.cardOf(id).equals(card.uuid()))
                .findFirst()
                .ifPresent(chosen::add);
          }
        }
        entry++;
      }
      for (String id : container.getAvailableDeviceIDsList()) {
        if (chosen.size() >= container.getAllocationSize()) {
          break;
        }
        chosen.add(id);
      }
      out.addContainerResponses(ContainerPreferredAllocationResponse.newBuilder().addAllDeviceIDs(chosen));
    }
    return out.build();
  }

  /** The pod kubelet is starting on this node. */
  Pod pendingPod() throws AllocationException {
    Node node = client.nodes().withName(nodeName).get();
    String lock = node == null || node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK);
    if (lock != null) {
      try {
        NodeLockCodec.NodeLock holder = NodeLockCodec.decode(lock);
        if (holder.hasOwner()) {
          Pod owner = client.pods().inNamespace(holder.namespace()).withName(holder.pod()).get();
          if (owner != null && hasEntriesLeft(owner)) {
            return owner;
          }
        }
      } catch (IllegalArgumentException e) {
        LOG.debug("ignoring unreadable node lock '{}': {}", lock, e.getMessage());
      }
    }
    List<Pod> pods =
        fieldSelector
            ? client.pods().inAnyNamespace().withField("spec.nodeName", nodeName).list().getItems()
            : client.pods().inAnyNamespace().list().getItems();
    return pods.stream()
        .filter(this::isBindingHere)
        .filter(PodAllocator::hasEntriesLeft)
        .min(Comparator.comparing((Pod p) -> PodRefs.annotations(p).getOrDefault(HamiAnnotations.BIND_TIME, ""))
            .thenComparing(p -> p.getMetadata().getNamespace() + "/" + p.getMetadata().getName()))
        .orElseThrow(() -> new AllocationException("no binding pod found on node " + nodeName));
  }

  private boolean isBindingHere(Pod pod) {
    Map<String, String> a = PodRefs.annotations(pod);
    String phase = a.get(HamiAnnotations.BIND_PHASE);
    boolean boundHere = pod.getSpec() != null && nodeName.equals(pod.getSpec().getNodeName());
    return boundHere
        && (pod.getStatus() == null || pod.getStatus().getPhase() == null || "Pending".equals(pod.getStatus().getPhase()))
        && a.containsKey(HamiAnnotations.BIND_TIME)
        && ("allocating".equals(phase) || "success".equals(phase))
        && nodeName.equals(a.get(HamiAnnotations.ASSIGNED_NODE));
  }

  private static boolean hasEntriesLeft(Pod pod) {
    String value = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_TO_ALLOCATE);
    if (value == null) {
      return false;
    }
    try {
      return nextEntry(DeviceListCodec.decode(value)) >= 0;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static String toAllocate(Pod pod) throws AllocationException {
    String value = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_TO_ALLOCATE);
    if (value == null) {
      throw new AllocationException("pod " + PodRefs.of(pod) + " has no " + HamiAnnotations.DEVICES_TO_ALLOCATE);
    }
    return value;
  }

  private static int nextEntry(List<List<DeviceGrant>> entries) {
    for (int i = 0; i < entries.size(); i++) {
      if (!entries.get(i).isEmpty()) {
        return i;
      }
    }
    return -1;
  }

  private static Map<String, String> env(@Nullable Container container) {
    Map<String, String> env = new LinkedHashMap<>();
    if (container != null && container.getEnv() != null) {
      for (EnvVar v : container.getEnv()) {
        if (v.getValue() != null) {
          env.put(v.getName(), v.getValue());
        }
      }
    }
    return env;
  }

  private static String uid(Pod pod) {
    String uid = pod.getMetadata().getUid();
    return uid == null || uid.isEmpty() ? PodRefs.of(pod).namespace() + "_" + PodRefs.of(pod).name() : uid;
  }

  private static ContainerAllocateResponse response(ContainerContract.Allocation allocation) {
    ContainerAllocateResponse.Builder r = ContainerAllocateResponse.newBuilder().putAllEnvs(allocation.env());
    for (ContainerContract.Mount m : allocation.mounts()) {
      r.addMounts(Mount.newBuilder().setContainerPath(m.containerPath()).setHostPath(m.hostPath()).setReadOnly(m.readOnly()));
    }
    for (ContainerContract.DeviceNode d : allocation.devices()) {
      r.addDevices(DeviceSpec.newBuilder().setContainerPath(d.containerPath()).setHostPath(d.hostPath()).setPermissions(d.permissions()));
    }
    return r.build();
  }

  private void patchToAllocate(PodRef pod, String value) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    patch.putObject("metadata").putObject("annotations").put(HamiAnnotations.DEVICES_TO_ALLOCATE, value);
    client.pods().inNamespace(pod.namespace()).withName(pod.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
  }

  /** Ends the bind handshake: records the phase and releases the node lock the pod holds. */
  private void finish(PodRef pod, String phase) {
    try {
      ObjectNode patch = PodJson.mapper().createObjectNode();
      patch.putObject("metadata").putObject("annotations").put(HamiAnnotations.BIND_PHASE, phase);
      client.pods().inNamespace(pod.namespace()).withName(pod.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    } catch (KubernetesClientException e) {
      LOG.warn("pod {}: could not set {}={}: {}", pod, HamiAnnotations.BIND_PHASE, phase, e.getMessage());
    }
    try {
      locks.release(nodeName, pod, false);
    } catch (KubernetesClientException e) {
      LOG.warn("node {}: could not release the lock of {}: {}", nodeName, pod, e.getMessage());
    }
  }

  /** The preparer that only asks the contract, for nodes where nothing needs writing on the host. */
  public static Preparer contractOnly(ContainerContract contract) {
    return (pod, uid, grant, env) -> contract.allocate(pod, uid, grant, env);
  }
}
