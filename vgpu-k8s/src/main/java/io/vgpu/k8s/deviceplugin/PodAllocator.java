package io.vgpu.k8s.deviceplugin;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import io.vgpu.k8s.codec.NodeRegisterCodec;
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
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiPortionEnv;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.scheduler.ApiWrites;
import io.vgpu.k8s.scheduler.NodeLock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Kubelet's Allocate, HAMi's way but without its guesswork or its trust in what a tenant can write.
 * Kubelet does not say which pod it is admitting, so the allocator finds the pod vgpu's scheduler is
 * starting here (the holder of the node's lock, else the oldest bound pod that still has containers
 * to allocate), and serves it only when everything agrees:
 *
 * <ul>
 *   <li>its grant is the scheduler's ({@link PodGrants}: with a grant key, the signature over its UID,
 *       this node and {@code hami.io/vgpu-devices-allocated} verifies). The cards and limits a
 *       container receives come from that signed value; {@code hami.io/vgpu-devices-to-allocate} only
 *       marks which containers are still to be served. A lock holder whose grant is refused gets a
 *       {@value #GRANT_REFUSED} Event, its handshake fails and its own lock is released;
 *   <li>kubelet asks for the cards that pod's next container was granted (any replicas of them: they
 *       are served by card). Other cards mean the Allocate is someone else's: it is refused, and the
 *       pod keeps its grant, its handshake and its lock, so that its own Allocate still succeeds;
 *   <li>no pod that vgpu's scheduler did not place (one that asks for the count resource with no grant,
 *       or with a grant that is not the scheduler's) is waiting for admission on the node as well:
 *       then whose Allocate this is cannot be told, and it is refused rather than risk handing one
 *       pod's grant to another. Each such pod gets one Event ({@value #SCHEDULER_BYPASSED} or {@value
 *       #GRANT_REFUSED}); its own Allocate is always refused.
 * </ul>
 *
 * A fraction container of a pod of KAI's dialect that vgpu schedules also gets KAI's {@code GPU_PORTION}
 * and {@code RUNAI_NUM_OF_GPUS}, the portion of its grant ({@link KaiPortionEnv}).
 *
 * <p>When every container is served the pod's {@code bind-phase} becomes {@code success} and the node
 * lock is released; when preparing the pod's own containers fails it becomes {@code failed} and the
 * lock is released too. A refusal is an {@link AllocationException} (kubelet rejects the pod; the
 * service logs its one line) plus the Event; it never writes another pod's annotations or lock.
 *
 * <p>Calls are serialized: kubelet allocates one container at a time, and the annotation update must
 * not race with itself.
 */
public final class PodAllocator implements DevicePluginService.Allocator {
  private static final Logger LOG = LoggerFactory.getLogger(PodAllocator.class);

  /** The Event reason on a pod whose grant is not the scheduler's. */
  public static final String GRANT_REFUSED = "GrantRefused";

  /** The Event reason on a pod that asks for the count resource but never met vgpu's scheduler. */
  public static final String SCHEDULER_BYPASSED = "SchedulerBypassed";

  /** The Event reason on the pod being started when kubelet asks for cards it was not granted. */
  public static final String ALLOCATE_REFUSED = "AllocateRefused";

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

  /** Where refusals are recorded on their pod. */
  @FunctionalInterface
  public interface Events {
    /** Records a Warning Event on {@code pod}; best effort, never throws. */
    void warning(Pod pod, String reason, String message);
  }

  /** The pod being started, its signed grant, and which of its containers are still to be served. */
  private record Starting(Pod pod, PodRef ref, boolean holdsLock, List<List<DeviceGrant>> granted, List<Boolean> unserved) {
    String describe(int index) {
      return "container " + index + " of pod " + ref + (holdsLock ? ", which holds the node's lock" : ", the oldest pod starting here");
    }

    boolean hasEntriesLeft() {
      return nextEntry(granted, unserved) >= 0;
    }
  }

  /**
   * A pod waiting for admission here that vgpu's scheduler did not place.
   *
   * @param bypassed whether it carries no grant at all (else one that is not the scheduler's)
   * @param why what is wrong with its grant, when it carries one
   */
  private record Stranger(Pod pod, PodRef ref, boolean bypassed, String why) {
    String reason() {
      return bypassed ? SCHEDULER_BYPASSED : GRANT_REFUSED;
    }

    String message(String countResource) {
      return bypassed
          ? "Allocate refused: the pod asks for " + countResource + " but bypassed vgpu's scheduler, which never granted it a card"
          : "Allocate refused: its grant is not the scheduler's (" + why + ")";
    }

    String brief() {
      return bypassed ? "bypassed vgpu's scheduler" : why;
    }
  }

  /** What the API server says is starting on the node. */
  private record Snapshot(@Nullable Starting starting, @Nullable Stranger refusedHolder, List<Stranger> strangers) {}

  private final KubernetesClient client;
  private final String nodeName;
  private final String countResource;
  private final Preparer preparer;
  private final NodeLock locks;
  /** The pod's annotation patches, whose answers (the whole pod) are not decoded. */
  private final ApiWrites writes;
  private final PodGrants grants;
  private final Events events;
  private final boolean fieldSelector;
  /** Strangers already told, as {@code uid reason}: one Event per pod, however often kubelet asks. */
  private final Set<String> told = new HashSet<>();

  /**
   * An allocator for one node.
   *
   * @param countResource the resource kubelet allocates through this plugin (e.g. {@code nvidia.com/gpu})
   * @param grants which grants are the scheduler's
   * @param events where refusals are recorded on their pods
   * @param fieldSelector whether to list the node's pods with a {@code spec.nodeName} field selector
   *     (true against a real API server; the test server cannot evaluate it)
   */
  public PodAllocator(
      KubernetesClient client,
      String nodeName,
      String countResource,
      Preparer preparer,
      NodeLock locks,
      PodGrants grants,
      Events events,
      boolean fieldSelector) {
    this.client = client;
    this.nodeName = nodeName;
    this.countResource = countResource;
    this.preparer = preparer;
    this.locks = locks;
    this.writes = new ApiWrites(client);
    this.grants = grants;
    this.events = events;
    this.fieldSelector = fieldSelector;
  }

  /**
   * An allocator for {@code nvidia.com/gpu} that takes grants as written and records no Events: for
   * in-process stand-ins of kubelet that play the whole cluster themselves.
   */
  public PodAllocator(KubernetesClient client, String nodeName, Preparer preparer, NodeLock locks, boolean fieldSelector) {
    this(client, nodeName, "nvidia.com/gpu", preparer, locks, PodGrants.unverified(), (pod, reason, message) -> {}, fieldSelector);
  }

  /**
   * Serves one Allocate call: one response per container request, in order.
   *
   * @throws AllocationException when the call cannot be served; the message names the pods and why
   */
  @Override
  public synchronized AllocateResponse allocate(AllocateRequest request) throws AllocationException {
    if (request.getContainerRequestsCount() == 0) {
      throw new AllocationException("Allocate on node " + nodeName + " asks for no container");
    }
    Snapshot snapshot = snapshot();
    snapshot.strangers().forEach(this::tell);
    Stranger refused = snapshot.refusedHolder();
    if (refused != null) {
      events.warning(refused.pod(), refused.reason(), refused.message(countResource));
      finish(refused.ref(), "failed");
      throw new AllocationException("pod " + refused.ref() + " holds node " + nodeName + "'s lock but its grant is refused: " + refused.brief());
    }
    Starting starting = snapshot.starting();
    if (starting == null) {
      if (!snapshot.strangers().isEmpty()) {
        throw new AllocationException("no pod placed by vgpu's scheduler is starting on node " + nodeName + "; refused: " + describe(snapshot.strangers()));
      }
      throw new AllocationException("no binding pod found on node " + nodeName);
    }
    List<Integer> plan = new ArrayList<>();
    String mismatch = plan(request, starting, plan);
    String others =
        snapshot.strangers().isEmpty()
            ? ""
            : "; pods that vgpu's scheduler did not place wait for admission on node " + nodeName + " too: " + describe(snapshot.strangers());
    if (mismatch != null) {
      if (snapshot.strangers().isEmpty()) {
        events.warning(starting.pod(), ALLOCATE_REFUSED, "an Allocate for " + requested(request) + " was refused: " + mismatch + "; the pod keeps its grant");
      }
      throw new AllocationException("Allocate refused on node " + nodeName + ": " + mismatch + others + "; " + starting.ref() + " keeps its grant");
    }
    if (!snapshot.strangers().isEmpty()) {
      throw new AllocationException(
          "Allocate refused on node " + nodeName + ": kubelet asks for the cards of " + starting.describe(plan.get(0))
              + ", and whose Allocate this is cannot be told" + others + "; " + starting.ref() + " keeps its grant");
    }
    return serve(starting, plan);
  }

  private AllocateResponse serve(Starting starting, List<Integer> plan) throws AllocationException {
    PodRef ref = starting.ref();
    try {
      List<Container> containers = PodRefs.containers(starting.pod());
      AllocateResponse.Builder out = AllocateResponse.newBuilder();
      List<Boolean> unserved = new ArrayList<>(starting.unserved());
      Map<String, Integer> cards = null;
      for (int index : plan) {
        Container manifest = index < containers.size() ? containers.get(index) : null;
        String name = manifest == null ? "container-" + index : manifest.getName();
        ContainerContract.Allocation allocation =
            preparer.prepare(ref, uid(starting.pod()), new ContainerGrant(name, starting.granted().get(index)), env(manifest));
        if (KaiGpuRequest.of(starting.pod()).shared()) {
          // A fraction of KAI's dialect: KAI's portion env too, from the signed grant and the node's registration.
          cards = cards != null ? cards : registeredMemory();
          Map<String, String> kai = KaiPortionEnv.of(starting.pod(), name, starting.granted().get(index), cards);
          if (!kai.isEmpty()) {
            Map<String, String> env = new LinkedHashMap<>(allocation.env());
            env.putAll(kai);
            allocation = new ContainerContract.Allocation(env, allocation.mounts(), allocation.devices(), allocation.hostFiles());
          }
        }
        out.addContainerResponses(response(allocation));
        unserved.set(index, false);
      }
      List<ContainerGrant> left = new ArrayList<>();
      for (int i = 0; i < starting.granted().size(); i++) {
        left.add(new ContainerGrant("", unserved.get(i) ? starting.granted().get(i) : List.of()));
      }
      patchToAllocate(ref, DeviceListCodec.encode(left));
      if (!unserved.contains(true)) {
        finish(ref, "success");
      }
      return out.build();
    } catch (AllocationException | RuntimeException e) {
      finish(ref, "failed");
      throw e instanceof AllocationException a ? a : new AllocationException("allocating pod " + ref + ": " + e.getMessage());
    }
  }

  /**
   * Matches kubelet's container requests to the pod's next unserved containers, filling {@code plan}
   * with their indexes.
   *
   * @return null when every request is for the cards granted to the container it falls to, else why not
   */
  private static @Nullable String plan(AllocateRequest request, Starting starting, List<Integer> plan) {
    List<Boolean> unserved = new ArrayList<>(starting.unserved());
    for (ContainerAllocateRequest container : request.getContainerRequestsList()) {
      int index = nextEntry(starting.granted(), unserved);
      if (index < 0) {
        return "pod " + starting.ref() + " has no container left to allocate devices to";
      }
      List<DeviceGrant> devices = starting.granted().get(index);
      if (devices.size() != container.getDevicesIdsCount()) {
        return "device number not matched: pod " + starting.ref() + " container " + index + " was granted " + devices.size()
            + " devices, kubelet asks for " + container.getDevicesIdsCount();
      }
      List<String> asked = container.getDevicesIdsList().stream().map(AdvertisedDevices::cardOf).sorted().toList();
      List<String> granted = devices.stream().map(DeviceGrant::uuid).sorted().toList();
      if (!asked.equals(granted)) {
        return "kubelet asks for cards " + container.getDevicesIdsList().stream().map(AdvertisedDevices::cardOf).distinct().toList()
            + " but " + starting.describe(index) + ", was granted " + devices.stream().map(DeviceGrant::uuid).toList();
      }
      unserved.set(index, false);
      plan.add(index);
    }
    return null;
  }

  private static String requested(AllocateRequest request) {
    return "cards " + request.getContainerRequestsList().stream()
        .map(c -> c.getDevicesIdsList().stream().map(AdvertisedDevices::cardOf).toList().toString())
        .collect(Collectors.joining(", "));
  }

  private void tell(Stranger stranger) {
    if (told.add(uid(stranger.pod()) + " " + stranger.reason())) {
      events.warning(stranger.pod(), stranger.reason(), stranger.message(countResource));
    }
  }

  private static String describe(List<Stranger> strangers) {
    return strangers.stream().map(s -> s.ref() + " (" + s.brief() + ")").collect(Collectors.joining(", "));
  }

  /**
   * Steers kubelet's choice of replica IDs to the cards the scheduler granted the pod being started,
   * so kubelet's own bookkeeping agrees with the scheduler's. Falls back to kubelet's order when no
   * such pod is known. Records nothing: only Allocate refuses.
   */
  @Override
  public synchronized PreferredAllocationResponse preferred(PreferredAllocationRequest request) {
    List<List<DeviceGrant>> entries = List.of();
    List<Boolean> unserved = List.of();
    try {
      Starting starting = snapshot().starting();
      if (starting != null) {
        entries = starting.granted();
        unserved = new ArrayList<>(starting.unserved());
      }
    } catch (RuntimeException e) {
      LOG.debug("preferred allocation without a pending pod: {}", e.getMessage());
    }
    PreferredAllocationResponse.Builder out = PreferredAllocationResponse.newBuilder();
    for (ContainerPreferredAllocationRequest container : request.getContainerRequestsList()) {
      Set<String> chosen = new LinkedHashSet<>(container.getMustIncludeDeviceIDsList());
      int entry = nextEntry(entries, unserved);
      if (entry >= 0) {
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
        unserved.set(entry, false);
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

  /** Reads the node's lock and pods: who is being started here, and who else waits for admission. */
  private Snapshot snapshot() {
    List<Pod> bound =
        (fieldSelector
                ? client.pods().inAnyNamespace().withField("spec.nodeName", nodeName).list().getItems()
                : client.pods().inAnyNamespace().list().getItems())
            .stream()
            .filter(p -> p.getSpec() != null && nodeName.equals(p.getSpec().getNodeName()))
            .toList();
    Starting starting = null;
    Stranger refusedHolder = null;
    Pod holder = lockHolder(bound);
    if (holder != null && hasEntriesLeft(holder)) {
      PodGrants.Held held = grants.of(holder, nodeName);
      if (!(held instanceof PodGrants.Granted granted)) {
        refusedHolder = stranger(holder, held);
      } else if (starting(holder, true, granted).hasEntriesLeft()) {
        starting = starting(holder, true, granted);
      }
    }
    if (starting == null && refusedHolder == null) {
      starting =
          bound.stream()
              .filter(this::isBindingHere)
              .filter(PodAllocator::hasEntriesLeft)
              .sorted(Comparator.comparing((Pod p) -> PodRefs.annotations(p).getOrDefault(HamiAnnotations.BIND_TIME, ""))
                  .thenComparing(p -> p.getMetadata().getNamespace() + "/" + p.getMetadata().getName()))
              .map(p -> grants.of(p, nodeName) instanceof PodGrants.Granted g ? starting(p, false, g) : null)
              .filter(s -> s != null && s.hasEntriesLeft())
              .findFirst()
              .orElse(null);
    }
    Set<String> skip = new HashSet<>();
    if (starting != null) {
      skip.add(uid(starting.pod()));
    }
    if (refusedHolder != null) {
      skip.add(uid(refusedHolder.pod()));
    }
    List<Stranger> strangers = new ArrayList<>();
    Set<String> live = new HashSet<>();
    for (Pod pod : bound) {
      live.add(uid(pod));
      if (skip.contains(uid(pod)) || !awaitsAdmission(pod) || !asksForCards(pod)) {
        continue;
      }
      PodGrants.Held held = grants.of(pod, nodeName);
      if (!(held instanceof PodGrants.Granted)) {
        strangers.add(stranger(pod, held));
      }
    }
    told.removeIf(key -> !live.contains(key.substring(0, key.lastIndexOf(' '))));
    return new Snapshot(starting, refusedHolder, strangers);
  }

  /** Each card's memory as this node registers it (its own registration), by UUID; empty when unreadable. */
  private Map<String, Integer> registeredMemory() {
    Node node = client.nodes().withName(nodeName).get();
    String register = node == null || node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
    Map<String, Integer> out = new LinkedHashMap<>();
    if (register != null) {
      try {
        NodeRegisterCodec.decode(register).forEach(d -> out.put(d.uuid(), d.memoryMiB()));
      } catch (IllegalArgumentException e) {
        LOG.debug("node {}: unreadable {}: {}", nodeName, HamiAnnotations.NODE_REGISTER, e.getMessage());
      }
    }
    return out;
  }

  /** The pod bound here that holds the node's lock; null when none does (a holder bound elsewhere is not being started here). */
  private @Nullable Pod lockHolder(List<Pod> bound) {
    Node node = client.nodes().withName(nodeName).get();
    String lock = node == null || node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_LOCK);
    if (lock == null) {
      return null;
    }
    try {
      NodeLockCodec.NodeLock holder = NodeLockCodec.decode(lock);
      if (!holder.hasOwner()) {
        return null;
      }
      for (Pod pod : bound) {
        if (holder.namespace().equals(pod.getMetadata().getNamespace()) && holder.pod().equals(pod.getMetadata().getName())) {
          return pod;
        }
      }
      return null;
    } catch (IllegalArgumentException e) {
      LOG.debug("ignoring unreadable node lock '{}': {}", lock, e.getMessage());
      return null;
    }
  }

  /** The pod's signed grant and its containers still to serve ({@code -to-allocate} non-empty there). */
  private static Starting starting(Pod pod, boolean holdsLock, PodGrants.Granted granted) {
    List<List<DeviceGrant>> marks = marks(pod);
    List<Boolean> unserved = new ArrayList<>();
    for (int i = 0; i < granted.perContainer().size(); i++) {
      unserved.add(i < marks.size() && !marks.get(i).isEmpty() && !granted.perContainer().get(i).isEmpty());
    }
    return new Starting(pod, PodRefs.of(pod), holdsLock, granted.perContainer(), unserved);
  }

  private static Stranger stranger(Pod pod, PodGrants.Held held) {
    return held instanceof PodGrants.Refused r ? new Stranger(pod, PodRefs.of(pod), false, r.why()) : new Stranger(pod, PodRefs.of(pod), true, "");
  }

  private boolean isBindingHere(Pod pod) {
    Map<String, String> a = PodRefs.annotations(pod);
    String phase = a.get(HamiAnnotations.BIND_PHASE);
    return awaitsAdmission(pod)
        && a.containsKey(HamiAnnotations.BIND_TIME)
        && ("allocating".equals(phase) || "success".equals(phase))
        && nodeName.equals(a.get(HamiAnnotations.ASSIGNED_NODE));
  }

  /** Bound here and not started: kubelet may be admitting it now. */
  private static boolean awaitsAdmission(Pod pod) {
    return pod.getMetadata().getDeletionTimestamp() == null
        && (pod.getStatus() == null || pod.getStatus().getPhase() == null || "Pending".equals(pod.getStatus().getPhase()));
  }

  /** Whether any container asks for the count resource, the only one kubelet allocates through this plugin. */
  private boolean asksForCards(Pod pod) {
    for (Container c : PodRefs.containers(pod)) {
      if (c.getResources() != null && (positive(c.getResources().getLimits()) || positive(c.getResources().getRequests()))) {
        return true;
      }
    }
    return false;
  }

  private boolean positive(@Nullable Map<String, Quantity> resources) {
    Quantity q = resources == null ? null : resources.get(countResource);
    return q != null && q.getNumericalAmount().signum() > 0;
  }

  /** {@code -to-allocate} as marks: a container whose segment is non-empty is still to be served. */
  private static List<List<DeviceGrant>> marks(Pod pod) {
    String value = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_TO_ALLOCATE);
    if (value == null) {
      return List.of();
    }
    try {
      return DeviceListCodec.decode(value);
    } catch (IllegalArgumentException e) {
      return List.of();
    }
  }

  private static boolean hasEntriesLeft(Pod pod) {
    return marks(pod).stream().anyMatch(m -> !m.isEmpty());
  }

  private static int nextEntry(List<List<DeviceGrant>> entries, List<Boolean> unserved) {
    for (int i = 0; i < entries.size() && i < unserved.size(); i++) {
      if (unserved.get(i) && !entries.get(i).isEmpty()) {
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

  static ContainerAllocateResponse response(ContainerContract.Allocation allocation) {
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
    writes.patchPod(pod.namespace(), pod.name(), patch.toString());
  }

  /** Ends the bind handshake: records the phase and releases the node lock the pod holds. */
  private void finish(PodRef pod, String phase) {
    try {
      ObjectNode patch = PodJson.mapper().createObjectNode();
      patch.putObject("metadata").putObject("annotations").put(HamiAnnotations.BIND_PHASE, phase);
      writes.patchPod(pod.namespace(), pod.name(), patch.toString());
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
