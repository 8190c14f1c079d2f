package io.vgpu.k8s.simulate;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.Device;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.Explanation;
import io.vgpu.core.FilterResult;
import io.vgpu.core.GangResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.NodeRejection;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.Placement;
import io.vgpu.core.QuotaUsage;
import io.vgpu.core.ReserveResult;
import io.vgpu.core.Waiting;
import io.vgpu.core.queue.QueueDemand;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceDivision;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.ReasonCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.kai.KaiDialect;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.pod.PodCpu;
import io.vgpu.k8s.pod.PodRequestException;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.simulate.SimulationResult.ContainerOutcome;
import io.vgpu.k8s.simulate.SimulationResult.DeviceOutcome;
import io.vgpu.k8s.simulate.SimulationResult.NodeOutcome;
import io.vgpu.k8s.simulate.SimulationResult.PodOutcome;
import io.vgpu.k8s.simulate.SimulationResult.Step;
import io.vgpu.k8s.yaml.InputException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Replays a {@link Scenario} through the same steps a cluster takes: the admission webhook, request
 * parsing, the engine's filter (candidates: the nodes in file order that the pod's node selection
 * allows) and reserve, and the annotations the scheduler writes. After every event, pending pods are
 * tried again in creation order. Ties go to the node listed first, then the lowest card index (the
 * engine's rules). A pod that asks for no GPU runs on the first node its node selection allows. When
 * a container contract is installed, each container with GPUs gets its allocation (env, mounts, host
 * files) when its pod is placed, from the configuration in force then, as a device plugin would.
 *
 * <p>Not thread-safe: one simulator replays one scenario.
 */
public final class Simulator {
  private final Scenario scenario;
  private final Supplier<Engine.Builder> engines;
  private final @Nullable ContainerContractProvider contracts;
  private @Nullable ContainerContract contract;
  private final Map<String, Device> deviceByUuid = new HashMap<>();
  private final Map<PodRef, SimPod> pods = new LinkedHashMap<>();
  private final List<Step> timeline = new ArrayList<>();
  private DeviceConfig config;
  private Engine engine;
  private AdmissionMutator admission;
  private PodRequestParser requests;
  private boolean replayed;
  /** The queues that exist, in creation order (KAI's tie-break). */
  private final Map<String, QueueSpec> queues = new LinkedHashMap<>();
  private final Map<PodRef, ScenarioEvent.CreatePodGroup> podGroups = new LinkedHashMap<>();
  /** Gangs already tried since the last event: one try places or holds back all their pending members. */
  private final Set<PodRef> gangsTried = new HashSet<>();

  /** A pod's state during the replay. */
  private static final class SimPod {
    final PodRef ref;
    final Pod pod;
    Phase phase = Phase.PENDING;
    @Nullable PodGrant grant;
    String node = "";
    Map<String, String> reasons = new LinkedHashMap<>();
    String message = "";
    /** Why the pod waits whatever the nodes, or {@code null}. */
    @Nullable Waiting waiting;
    /** The queue its grant is charged to, or {@code null}. */
    @Nullable String queue;
    /** The card portion it holds in hundredths, or 0 when it holds none. */
    int portion;
    /** Per container name, what the contract gave it when the pod was placed. */
    Map<String, ContainerContract.Allocation> allocations = new LinkedHashMap<>();

    SimPod(PodRef ref, Pod pod) {
      this.ref = ref;
      this.pod = pod;
    }
  }

  /**
   * A simulator for one scenario.
   *
   * @param scenario the scenario
   * @param engines makes the engine builders (placement policies are added there); a new engine is built
   *     whenever the scheduler's configuration changes
   * @param contracts makes the contract of what containers receive for their grants from the
   *     configuration's {@link DeviceConfig#contractSettings()}, or {@code null} to leave {@code env} out
   * @throws InputException when the configuration cannot make a contract
   */
  public Simulator(Scenario scenario, Supplier<Engine.Builder> engines, @Nullable ContainerContractProvider contracts) {
    this.scenario = scenario;
    this.engines = engines;
    this.contracts = contracts;
    for (NodeSpec node : scenario.nodes()) {
      node.devices().forEach(d -> deviceByUuid.put(d.uuid(), d));
    }
    this.config = scenario.config();
    scenario.queues().forEach(q -> queues.put(q.spec().name(), q.spec()));
    this.contract = newContract(config);
    this.engine = newEngine(config);
    this.admission = new AdmissionMutator(config, AdmissionMutator.DEFAULT_SCHEDULER_NAME);
    this.requests = new PodRequestParser(config.schema());
  }

  /**
   * Replays every event; call once.
   *
   * @return the final state
   * @throws InputException when an event contradicts the state (a pod created twice, a missing pod deleted)
   */
  public SimulationResult replay() {
    if (replayed) {
      throw new IllegalStateException("the scenario was already replayed");
    }
    replayed = true;
    List<ScenarioEvent> events = scenario.events();
    for (int i = 0; i < events.size(); i++) {
      ScenarioEvent event = events.get(i);
      List<PodRef> scheduled = new ArrayList<>();
      SimPod created = null;
      if (event instanceof ScenarioEvent.Create create) {
        created = create(create, scheduled);
      } else if (event instanceof ScenarioEvent.Delete delete) {
        delete(delete);
      } else if (event instanceof ScenarioEvent.SetConfig setConfig) {
        reconfigure(setConfig.config());
      } else if (event instanceof ScenarioEvent.Patch patch) {
        requirePatchable(patch);
      } else if (event instanceof ScenarioEvent.CreateQueue queue) {
        queues.put(queue.spec().name(), queue.spec());
        engine.upsertQueue(queue.spec());
      } else if (event instanceof ScenarioEvent.CreatePodGroup group) {
        podGroups.put(group.ref(), group);
      } else if (event instanceof ScenarioEvent.DeleteObject object) {
        deleteObject(object);
      }
      gangsTried.clear();
      if (created != null && created.phase == Phase.PENDING && place(created, scheduled)) {
        scheduled.add(created.ref);
      }
      retryPending(created, scheduled);
      timeline.add(new Step(i, event.describe(), scheduled));
    }
    return result();
  }

  // --- Events

  private @Nullable SimPod create(ScenarioEvent.Create event, List<PodRef> scheduled) {
    SimPod existing = pods.get(event.ref());
    if (existing != null && existing.phase != Phase.REJECTED) {
      throw new InputException(event.position(), "create: pod " + event.ref() + " already exists");
    }
    pods.remove(event.ref());
    Optional<String> kaiRefused = kaiRefusal(event.pod());
    if (kaiRefused.isPresent()) {
      SimPod rejected = new SimPod(event.ref(), event.pod());
      rejected.phase = Phase.REJECTED;
      rejected.message = kaiRefused.get();
      pods.put(event.ref(), rejected);
      return null;
    }
    AdmissionResult admitted = admission.admit(event.pod(), engine::quota);
    if (!admitted.allowed()) {
      SimPod rejected = new SimPod(event.ref(), event.pod());
      rejected.phase = Phase.REJECTED;
      rejected.message = admitted.message();
      pods.put(event.ref(), rejected);
      return null;
    }
    SimPod pod = new SimPod(event.ref(), admitted.admittedPod());
    pods.put(event.ref(), pod);
    return pod;
  }

  /** KAI's admission check for a pod in its dialect that vgpu schedules: KAI's message, or empty. */
  private Optional<String> kaiRefusal(Pod pod) {
    return kaiDialect(pod) ? KaiGpuRequest.validate(pod) : Optional.empty();
  }

  /** Whether vgpu's own engine schedules this pod as KAI's dialect ({@code stack: vgpu}). */
  private boolean kaiDialect(Pod pod) {
    return scenario.stack() == Stack.VGPU && KaiDialect.speaks(pod, KaiKeys.SCHEDULER_NAME);
  }

  private void deleteObject(ScenarioEvent.DeleteObject event) {
    if (event.kind().equals(KaiObjectParser.QUEUE_KIND)) {
      if (queues.remove(event.name()) == null) {
        throw new InputException(event.position(), event.describe() + ": the queue does not exist");
      }
      engine.removeQueue(event.name());
    } else if (podGroups.remove(new PodRef(event.namespace(), event.name())) == null) {
      throw new InputException(event.position(), event.describe() + ": the PodGroup does not exist");
    }
  }

  private void delete(ScenarioEvent.Delete event) {
    SimPod pod = pods.remove(event.ref());
    if (pod == null) {
      throw new InputException(event.position(), "delete: pod " + event.ref() + " does not exist");
    }
    if (pod.grant != null) {
      engine.release(pod.ref);
    }
  }

  /**
   * A patch changes nothing here (no API server admits it, and simulate places pods by what they asked
   * for at creation), but it must name a pod that exists, as in the lab.
   */
  private void requirePatchable(ScenarioEvent.Patch event) {
    SimPod pod = pods.get(event.ref());
    if (pod == null || pod.phase == Phase.REJECTED) {
      throw new InputException(event.position(), "patch: pod " + event.ref() + " does not exist");
    }
  }

  private void reconfigure(DeviceConfig next) {
    boolean schedulerChanged = !next.engineConfig().equals(config.engineConfig());
    config = next;
    contract = newContract(config);
    admission = new AdmissionMutator(config, AdmissionMutator.DEFAULT_SCHEDULER_NAME);
    requests = new PodRequestParser(config.schema());
    if (schedulerChanged) {
      engine = newEngine(config);
      for (SimPod pod : pods.values()) {
        if (pod.grant != null) {
          engine.restore(pod.grant, pod.queue);
        }
      }
    } else {
      registerNodes(engine, config);
    }
  }

  private void retryPending(@Nullable SimPod skip, List<PodRef> scheduled) {
    for (SimPod pod : pods.values()) {
      if (pod.phase == Phase.PENDING && pod != skip && place(pod, scheduled)) {
        scheduled.add(pod.ref);
      }
    }
  }

  /**
   * Tries a pending pod: alone, or, for a member of a gang, with the whole gang (whose members placed
   * now are added to {@code scheduled}, this one included). Returns whether this pod alone became
   * Running and is still to be added.
   */
  private boolean place(SimPod pod, List<PodRef> scheduled) {
    Optional<Gang> gang = gangOf(pod);
    if (gang.isEmpty()) {
      return tryPlace(pod);
    }
    if (gangsTried.add(gang.get().ref())) {
      placeGang(gang.get(), scheduled);
    }
    return false;
  }

  /**
   * The gang a pending pod belongs to: the PodGroup its {@code pod-group-name} names, when that asks for
   * more than one member. A pod naming a PodGroup that does not exist waits for it, as under KAI.
   */
  private Optional<Gang> gangOf(SimPod pod) {
    if (!kaiDialect(pod.pod)) {
      return Optional.empty();
    }
    Optional<String> name = KaiDialect.podGroupOf(pod.pod);
    if (name.isEmpty()) {
      return Optional.empty();
    }
    PodRef ref = new PodRef(pod.ref.namespace(), name.get());
    ScenarioEvent.CreatePodGroup group = podGroups.get(ref);
    if (group == null) {
      return Optional.of(new Gang(ref, 0, Optional.empty(), false));
    }
    return group.minMember() > 1 ? Optional.of(new Gang(ref, group.minMember(), group.queue(), true)) : Optional.empty();
  }

  /**
   * A gang as the replay tries it.
   *
   * @param ref the PodGroup's namespace and name
   * @param minMember how many members must hold grants together
   * @param queue the PodGroup's queue, which its members are charged to when it names one
   * @param exists whether the PodGroup exists (its members wait for it when not)
   */
  private record Gang(PodRef ref, int minMember, Optional<String> queue, boolean exists) {}

  /**
   * Places a gang's pending members all or nothing once at least {@code minMember} of its members exist
   * (running ones count); until then, or when too few fit, every pending member waits with {@code
   * GangIncomplete}.
   */
  private void placeGang(Gang group, List<PodRef> scheduled) {
    List<SimPod> pending = new ArrayList<>();
    int running = 0;
    for (SimPod member : pods.values()) {
      if (member.phase == Phase.REJECTED || !member.ref.namespace().equals(group.ref().namespace()) || !kaiDialect(member.pod)
          || !KaiDialect.podGroupOf(member.pod).orElse("").equals(group.ref().name())) {
        continue;
      }
      if (member.phase == Phase.RUNNING) {
        running++;
      } else {
        member.reasons = new LinkedHashMap<>();
        member.message = "";
        member.waiting = null;
        pending.add(member);
      }
    }
    if (pending.isEmpty()) {
      return;
    }
    if (!group.exists()) {
      waitAll(pending, "PodGroup " + group.ref() + " does not exist");
      return;
    }
    int members = running + pending.size();
    if (members < group.minMember()) {
      waitAll(pending, "gang " + group.ref() + " has " + members + " of its " + group.minMember() + " members");
      return;
    }
    List<CompiledRequest> compiled = new ArrayList<>();
    Map<PodRef, SimPod> byRef = new HashMap<>();
    for (SimPod member : pending) {
      try {
        PodRequest request = KaiDialect.request(requests.parse(member.pod), member.pod);
        if (group.queue().isPresent()) {
          request = request.withQueue(group.queue().get());
        }
        compiled.add(engine.compile(request));
        byRef.put(member.ref, member);
      } catch (PodRequestException | IllegalArgumentException e) {
        member.message = e.getMessage();
      }
    }
    GangResult result = engine.reserveGang(compiled, Math.max(0, group.minMember() - running), candidates(pending.get(0).pod, new LinkedHashMap<>()));
    if (!result.reserved()) {
      pending.forEach(m -> m.waiting = result.waiting());
      return;
    }
    for (Placement placement : result.placed()) {
      SimPod member = byRef.get(placement.grant().pod());
      running(member, placement);
      scheduled.add(member.ref);
    }
    result.refused().forEach((ref, why) -> byRef.get(ref).message = why);
  }

  private static void waitAll(List<SimPod> pending, String message) {
    Waiting waiting = new Waiting(Waiting.Reason.GANG_INCOMPLETE, message);
    pending.forEach(m -> m.waiting = waiting);
  }

  /** Records a reserved placement: the pod runs with its grant, queue, portion and allocations. */
  private void running(SimPod pod, Placement placement) {
    PodGrant grant = placement.grant();
    pod.grant = grant;
    pod.node = grant.node();
    pod.phase = Phase.RUNNING;
    pod.waiting = null;
    pod.queue = engine.chargedQueue(pod.ref).orElse(null);
    pod.portion = portionHeld(placement);
    pod.allocations = allocate(pod, grant);
  }

  /** The card portion the placement gives, in hundredths of its first card; 0 when it asks for none. */
  private int portionHeld(Placement placement) {
    PodRequest request = placement.request().request();
    List<ContainerRequest> all = new ArrayList<>(request.initContainers());
    all.addAll(request.containers());
    for (ContainerRequest c : all) {
      if (c.portion() == null) {
        continue;
      }
      for (ContainerGrant g : placement.grant().allContainers()) {
        if (g.name().equals(c.name()) && !g.devices().isEmpty()) {
          String uuid = g.devices().get(0).uuid();
          int total = engine.usage(placement.node()).orElseThrow().devices().stream()
              .filter(d -> d.device().uuid().equals(uuid)).findFirst().orElseThrow().device().memoryMiB();
          return c.portion().hundredthsOn(total);
        }
      }
    }
    return 0;
  }

  // --- Engine and contract

  private @Nullable ContainerContract newContract(DeviceConfig c) {
    if (contracts == null) {
      return null;
    }
    try {
      return contracts.create(c.contractSettings());
    } catch (IllegalArgumentException e) {
      throw new InputException("config: " + e.getMessage());
    }
  }

  private Engine newEngine(DeviceConfig c) {
    Engine e = engines.get().config(c.engineConfig()).build();
    registerNodes(e, c);
    scenario.quotas().forEach(e::setQuota);
    queues.values().forEach(e::upsertQueue);
    return e;
  }

  private void registerNodes(Engine target, DeviceConfig c) {
    DeviceRegistrar registrar = new DeviceRegistrar(c.schema().vendor());
    for (NodeSpec node : scenario.nodes()) {
      List<SchedulableDevice> devices;
      try {
        devices = registrar.register(node.devices(), c.sharing());
      } catch (IllegalArgumentException e) {
        throw new InputException(node.position(), "node " + node.name() + ": " + e.getMessage());
      }
      if (!devices.isEmpty()) {
        target.upsertNode(new NodeDevices(node.name(), devices, node.cordoned()));
      }
    }
  }

  // --- Placement

  /** The nodes the pod's selection allows, in file order; the others get {@code NodeSelectorMismatch}. */
  private List<String> candidates(Pod pod, Map<String, String> excluded) {
    List<String> out = new ArrayList<>();
    for (NodeSpec node : scenario.nodes()) {
      if (NodeSelection.allows(pod, node.name(), node.labels())) {
        out.add(node.name());
      } else {
        excluded.put(node.name(), ReasonCodec.NODE_SELECTOR_MISMATCH);
      }
    }
    return out;
  }

  /** Tries to place a pending pod; returns whether it is now Running. */
  private boolean tryPlace(SimPod pod) {
    pod.reasons = new LinkedHashMap<>();
    pod.message = "";
    pod.waiting = null;
    boolean kai = kaiDialect(pod.pod);
    Optional<String> foreign = foreignScheduler(pod.pod).filter(name -> !kai);
    if (foreign.isPresent()) {
      // Under KAI, vgpu only isolates: KAI's pods are KAI's to place (SCENARIO.md "Queues and KAI's pod dialect").
      boolean underKai = scenario.stack() == Stack.KAI && foreign.get().equals(KaiKeys.SCHEDULER_NAME);
      pod.message = "spec.schedulerName is " + foreign.get() + ": the pod is left to " + (underKai ? KaiKeys.SCHEDULER_NAME : "that scheduler");
      return false;
    }
    PodRequest request;
    try {
      request = requests.parse(pod.pod);
      if (kai) {
        request = KaiDialect.request(request, pod.pod);
      }
    } catch (PodRequestException e) {
      pod.message = e.getMessage();
      return false;
    }
    Map<String, String> excluded = new LinkedHashMap<>();
    List<String> candidates = candidates(pod.pod, excluded);
    if (!request.wantsDevices() && request.queue() == null) {
      return placeWithoutDevices(pod, candidates, excluded);
    }
    CompiledRequest compiled;
    try {
      compiled = engine.compile(request);
    } catch (IllegalArgumentException e) {
      pod.message = e.getMessage();
      return false;
    }
    FilterResult result = engine.filter(compiled, candidates, true);
    if (result.waiting().isPresent()) {
      pod.waiting = result.waiting().get();
      return false;
    }
    if (result.placement().isPresent()) {
      Placement placement = result.placement().get();
      ReserveResult reserved = engine.reserve(placement);
      if (!reserved.reserved()) {
        pod.message = reserved.message();
        return false;
      }
      running(pod, placement);
      return true;
    }
    Map<String, NodeRejection> byNode = new HashMap<>();
    result.rejections().forEach(r -> byNode.put(r.node(), r));
    for (NodeSpec node : scenario.nodes()) {
      String excludedReason = excluded.get(node.name());
      NodeRejection rejection = byNode.get(node.name());
      if (excludedReason != null) {
        pod.reasons.put(node.name(), excludedReason);
      } else if (rejection != null) {
        pod.reasons.put(node.name(), ReasonCodec.render(rejection));
      }
    }
    return false;
  }

  private boolean placeWithoutDevices(SimPod pod, List<String> candidates, Map<String, String> excluded) {
    String nodeName = pod.pod.getSpec() == null ? null : pod.pod.getSpec().getNodeName();
    if (nodeName != null && !nodeName.isEmpty()) {
      if (scenario.nodes().stream().noneMatch(n -> n.name().equals(nodeName))) {
        pod.message = "spec.nodeName " + nodeName + " is not a node of the scenario";
        return false;
      }
      pod.node = nodeName;
    } else if (candidates.isEmpty()) {
      pod.reasons.putAll(excluded);
      return false;
    } else {
      pod.node = candidates.get(0);
    }
    pod.phase = Phase.RUNNING;
    return true;
  }

  private static Optional<String> foreignScheduler(Pod pod) {
    PodSpec spec = pod.getSpec();
    String name = spec == null ? null : spec.getSchedulerName();
    if (name == null || name.isEmpty() || name.equals("default-scheduler") || name.equals(AdmissionMutator.DEFAULT_SCHEDULER_NAME)) {
      return Optional.empty();
    }
    return Optional.of(name);
  }

  // --- Results

  private SimulationResult result() {
    List<PodOutcome> outcomes = new ArrayList<>();
    for (SimPod pod : pods.values()) {
      outcomes.add(outcome(pod));
    }
    List<NodeOutcome> nodes = new ArrayList<>();
    for (NodeSpec node : scenario.nodes()) {
      List<DeviceOutcome> devices = new ArrayList<>();
      Optional<NodeUsage> usage = engine.usage(node.name());
      if (usage.isPresent()) {
        for (DeviceUsage d : usage.get().devices()) {
          devices.add(new DeviceOutcome(deviceByUuid.get(d.device().uuid()).model(), d));
        }
      }
      nodes.add(new NodeOutcome(node.name(), devices));
    }
    List<QuotaUsage> quotas = new ArrayList<>();
    for (String namespace : scenario.quotas().keySet()) {
      quotas.add(engine.quota(namespace));
    }
    return new SimulationResult(outcomes, timeline, nodes, quotas, queueOutcomes());
  }

  /**
   * Every queue that exists at the end with KAI's division over the cluster's cards: a running pod counts
   * what its grant is charged (its portion, or whole cards), a pending pod in KAI's dialect what it asks
   * for as KAI counts it (a memory pod its unrounded {@code MiB / smallest card}). Scenario nodes carry no
   * CPU or memory, so those totals are 0 and their requests are the pods' own.
   */
  private List<SimulationResult.QueueOutcome> queueOutcomes() {
    if (queues.isEmpty()) {
      return List.of();
    }
    Map<String, double[]> requested = new HashMap<>();
    Map<String, double[]> allocated = new HashMap<>();
    int smallestCard = KaiDialect.smallestCardMiB(engine.usage());
    for (SimPod pod : pods.values()) {
      if (pod.phase == Phase.REJECTED || !kaiDialect(pod.pod)) {
        continue;
      }
      String queue = pod.phase == Phase.RUNNING ? pod.queue : KaiDialect.queueOf(pod.pod);
      if (queue == null || !queues.containsKey(queue)) {
        continue;
      }
      double gpu = pod.phase == Phase.RUNNING ? engine.chargedGpuHundredths(pod.ref) / 100.0 : KaiGpuRequest.of(pod.pod).pendingCards(smallestCard);
      long cpu = Math.max(0, PodCpu.requestMilli(pod.pod));
      double[] amounts = {gpu, cpu, memoryMegabytes(pod.pod)};
      add(requested, queue, amounts);
      if (pod.phase == Phase.RUNNING) {
        add(allocated, queue, amounts);
      }
    }
    Map<String, QueueDemand> demands = new HashMap<>();
    requested.forEach((q, r) -> demands.put(q, new QueueDemand(byResource(r), byResource(allocated.getOrDefault(q, new double[3])))));
    long cards = engine.cardsByType().values().stream().mapToLong(Long::longValue).sum();
    Map<String, Map<QueueResource, QueueShare>> shares =
        ResourceDivision.divide(List.copyOf(queues.values()), demands, byResource(new double[] {cards, 0, 0}));
    List<SimulationResult.QueueOutcome> out = new ArrayList<>();
    for (QueueSpec spec : queues.values()) {
      out.add(new SimulationResult.QueueOutcome(spec.name(), spec.parent(), shares.get(spec.name())));
    }
    return out;
  }

  /** The pod's memory requests in MB (10^6 bytes), as KAI divides memory. */
  private static double memoryMegabytes(Pod pod) {
    java.math.BigDecimal sum = java.math.BigDecimal.ZERO;
    for (Container c : pod.getSpec() == null || pod.getSpec().getContainers() == null ? List.<Container>of() : pod.getSpec().getContainers()) {
      io.fabric8.kubernetes.api.model.Quantity q = c.getResources() == null || c.getResources().getRequests() == null ? null : c.getResources().getRequests().get("memory");
      if (q != null) {
        sum = sum.add(io.fabric8.kubernetes.api.model.Quantity.getAmountInBytes(q));
      }
    }
    return sum.doubleValue() / 1e6;
  }

  private static void add(Map<String, double[]> sums, String queue, double[] amounts) {
    double[] s = sums.computeIfAbsent(queue, k -> new double[3]);
    for (int i = 0; i < 3; i++) {
      s[i] += amounts[i];
    }
  }

  private static Map<QueueResource, Double> byResource(double[] amounts) {
    Map<QueueResource, Double> out = new EnumMap<>(QueueResource.class);
    out.put(QueueResource.GPU, amounts[0]);
    out.put(QueueResource.CPU, amounts[1]);
    out.put(QueueResource.MEMORY, amounts[2]);
    return out;
  }

  private PodOutcome outcome(SimPod pod) {
    Map<String, String> annotations = new LinkedHashMap<>();
    List<ContainerOutcome> init = new ArrayList<>();
    List<ContainerOutcome> app = new ArrayList<>();
    if (pod.phase == Phase.RUNNING) {
      PodGrant grant = pod.grant != null ? pod.grant : emptyGrant(pod);
      if (pod.grant != null) {
        String devices = DeviceListCodec.encode(grant);
        annotations.put(HamiAnnotations.ASSIGNED_NODE, pod.node);
        annotations.put(HamiAnnotations.DEVICES_ALLOCATED, devices);
        annotations.put(HamiAnnotations.DEVICES_TO_ALLOCATE, devices);
      }
      grant.initContainers().forEach(c -> init.add(containerOutcome(pod, c)));
      grant.containers().forEach(c -> app.add(containerOutcome(pod, c)));
    }
    return new PodOutcome(
        pod.ref, pod.phase, pod.node, annotations, init, app, pod.reasons, pod.message, Optional.ofNullable(pod.waiting),
        pod.phase == Phase.RUNNING && pod.portion > 0 ? OptionalInt.of(pod.portion) : OptionalInt.empty());
  }

  private static PodGrant emptyGrant(SimPod pod) {
    PodSpec spec = pod.pod.getSpec();
    List<ContainerGrant> init = new ArrayList<>();
    List<ContainerGrant> app = new ArrayList<>();
    if (spec != null && spec.getInitContainers() != null) {
      spec.getInitContainers().forEach(c -> init.add(ContainerGrant.empty(nameOf(c))));
    }
    if (spec != null && spec.getContainers() != null) {
      spec.getContainers().forEach(c -> app.add(ContainerGrant.empty(nameOf(c))));
    }
    return new PodGrant(pod.ref, pod.node, init, app);
  }

  private ContainerOutcome containerOutcome(SimPod pod, ContainerGrant grant) {
    ContainerContract.Allocation allocation = pod.allocations.get(grant.name());
    return new ContainerOutcome(grant.name(), grant.devices(), allocation == null ? Map.of() : allocation.env());
  }

  /** What the contract gives each container with GPUs; a container's value it cannot take is an input error. */
  private Map<String, ContainerContract.Allocation> allocate(SimPod pod, PodGrant grant) {
    Map<String, ContainerContract.Allocation> out = new LinkedHashMap<>();
    if (contract == null) {
      return out;
    }
    PodSpec spec = pod.pod.getSpec();
    List<Container> manifests = new ArrayList<>();
    if (spec != null && spec.getInitContainers() != null) {
      manifests.addAll(spec.getInitContainers());
    }
    if (spec != null && spec.getContainers() != null) {
      manifests.addAll(spec.getContainers());
    }
    for (ContainerGrant c : grant.allContainers()) {
      if (!c.devices().isEmpty()) {
        try {
          out.put(c.name(), contract.allocate(pod.ref, podUid(pod), c, manifestEnv(c.name(), manifests)));
        } catch (IllegalArgumentException e) {
          throw new InputException(e.getMessage());
        }
      }
    }
    return out;
  }

  /**
   * What the container contract gave a container of a running pod when it was placed: env, mounts and
   * the files the node agent writes.
   *
   * @return the allocation, or empty when the pod is not running, the container has no GPU or no
   *     contract is installed
   */
  public Optional<ContainerContract.Allocation> allocation(PodRef ref, String container) {
    SimPod pod = pods.get(ref);
    return pod == null || pod.phase != Phase.RUNNING ? Optional.empty() : Optional.ofNullable(pod.allocations.get(container));
  }

  private static String podUid(SimPod pod) {
    String uid = pod.pod.getMetadata() == null ? null : pod.pod.getMetadata().getUid();
    if (uid != null && !uid.isEmpty()) {
      return uid;
    }
    return UUID.nameUUIDFromBytes(pod.ref.toString().getBytes(StandardCharsets.UTF_8)).toString();
  }

  private static Map<String, String> manifestEnv(String container, List<Container> manifests) {
    Map<String, String> env = new LinkedHashMap<>();
    for (Container c : manifests) {
      if (container.equals(nameOf(c)) && c.getEnv() != null) {
        for (EnvVar v : c.getEnv()) {
          if (v.getValue() != null) {
            env.put(v.getName(), v.getValue());
          }
        }
      }
    }
    return env;
  }

  private static String nameOf(Container c) {
    return c.getName() == null ? "" : c.getName();
  }

  // --- Explain

  /**
   * Explains, at the end of the replay, why a pod runs where it runs or waits. A running pod's own grant
   * is left out while it is judged.
   *
   * @throws InputException when the scenario left no such pod
   */
  public PodExplanation explain(PodRef ref) {
    if (!replayed) {
      throw new IllegalStateException("replay the scenario first");
    }
    SimPod pod = pods.get(ref);
    if (pod == null) {
      throw new InputException("--explain: pod " + ref + " is not in the scenario's final state");
    }
    if (pod.phase == Phase.REJECTED || (foreignScheduler(pod.pod).isPresent() && !kaiDialect(pod.pod))) {
      return new PodExplanation(ref, pod.phase, pod.message, List.of(), Optional.empty());
    }
    if (pod.waiting != null) {
      return new PodExplanation(ref, pod.phase, pod.waiting.reason().word() + ": " + pod.waiting.message(), List.of(), Optional.empty());
    }
    PodRequest request;
    try {
      request = requests.parse(pod.pod);
      if (kaiDialect(pod.pod)) {
        request = KaiDialect.request(request, pod.pod);
      }
    } catch (PodRequestException e) {
      return new PodExplanation(ref, pod.phase, e.getMessage(), List.of(), Optional.empty());
    }
    Map<String, String> excluded = new LinkedHashMap<>();
    List<String> candidates = candidates(pod.pod, excluded);
    if (!request.wantsDevices()) {
      List<PodExplanation.NodeVerdict> verdicts = new ArrayList<>();
      for (NodeSpec node : scenario.nodes()) {
        String reason = excluded.getOrDefault(node.name(), "");
        verdicts.add(new PodExplanation.NodeVerdict(node.name(), reason.isEmpty(), reason, List.of(), List.of()));
      }
      return new PodExplanation(ref, pod.phase, pod.message, verdicts, Optional.empty());
    }
    Explanation explanation;
    PodGrant held = pod.grant;
    if (held != null) {
      engine.release(ref);
    }
    try {
      explanation = engine.explain(engine.compile(request), candidates);
    } catch (IllegalArgumentException e) {
      return new PodExplanation(ref, pod.phase, e.getMessage(), List.of(), Optional.empty());
    } finally {
      if (held != null) {
        engine.restore(held, pod.queue);
      }
    }
    Map<String, Explanation.NodeExplanation> byNode = new HashMap<>();
    explanation.nodes().forEach(n -> byNode.put(n.node(), n));
    List<PodExplanation.NodeVerdict> verdicts = new ArrayList<>();
    for (NodeSpec node : scenario.nodes()) {
      Explanation.NodeExplanation n = byNode.get(node.name());
      if (n == null) {
        verdicts.add(new PodExplanation.NodeVerdict(node.name(), false, excluded.get(node.name()), List.of(), List.of()));
      } else if (n.fits()) {
        verdicts.add(new PodExplanation.NodeVerdict(node.name(), true, "", n.chosen(), List.of()));
      } else {
        String reason = n.rejection() == null ? "" : ReasonCodec.render(n.rejection());
        verdicts.add(new PodExplanation.NodeVerdict(node.name(), false, reason, List.of(), n.cards()));
      }
    }
    return new PodExplanation(ref, pod.phase, pod.message, verdicts, explanation.nearest());
  }
}
