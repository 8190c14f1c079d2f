package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.CandidateNodes;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.Explanation;
import io.vgpu.core.FilterResult;
import io.vgpu.core.GangHolds;
import io.vgpu.core.GangResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.NodeRejection;
import io.vgpu.core.Placement;
import io.vgpu.core.ReserveResult;
import io.vgpu.core.Waiting;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.codec.ReasonCodec;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingResult;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderFilterResult;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JsonGenerator;
import tools.jackson.databind.node.ObjectNode;

/**
 * The scheduler extender's two verbs with HAMi's semantics.
 *
 * <p><b>Filter</b> in node-cache mode picks exactly one node and reserves the usage in the ledger, so
 * the next filter already sees it, answers, and writes the decision into the pod's annotations behind
 * the answer; the pod's bind waits for that write, and if it fails the reservation is rolled back and
 * the bind refused (kube-scheduler then filters the pod again). With node objects (cluster-autoscaler's dry
 * run) it evaluates a throw-away copy and changes nothing. Failures name, per node, HAMi's reasons, and
 * a {@code FilteringFailed} event says what would make the pod fit.
 *
 * <p><b>Bind</b> takes the node's lock, marks the pod {@code allocating} and posts the Binding; the
 * device plugin finishes the handshake when kubelet allocates the containers. A bind that finds the
 * lock held waits for its turn (HAMi fails it at once, and kube-scheduler retries the pod only after a
 * back-off of a second or more, which in a burst onto few nodes is most of the time spent).
 *
 * <p><b>Pods without devices</b> pass through unfiltered, as in HAMi, unless the extender places them
 * too ({@code --place-cpu-only-pods}): then such a pod goes to the nodes without vGPU cards when
 * kube-scheduler found any feasible (its CPU strands no card there), else to the one card node the
 * placement policy prefers (for {@code vgpu}, where its CPU strands the least idle card share), and
 * its CPU is counted there at once so that the next filter sees it before the binding does. Nothing is
 * reserved or written: such a pod holds no card.
 */
public final class Extender {
  private static final Logger LOG = LoggerFactory.getLogger(Extender.class);
  private static final int RESERVE_ATTEMPTS = 3;
  /** What a bind keeps of its time for its writes (the mark and the Binding) after waiting for a lock. */
  private static final Duration WRITE_ALLOWANCE = Duration.ofSeconds(1);
  /** How long a bind waiting for a node's lock goes without looking again (for an expired lock or a holder gone). */
  private static final Duration LOCK_LOOK_AGAIN = Duration.ofSeconds(1);
  /** Nodes an event message names at most; the API server keeps 1024 characters of a message anyway. */
  private static final int MESSAGE_NODES = 20;

  private final KubernetesClient client;
  private final ApiWrites writes;
  private final Engine engine;
  private final Supplier<Engine.Builder> engines;
  private final ClusterLedger ledger;
  private final Leadership leadership;
  private final PodRequestParser requests;
  private final NodeLock locks;
  private final EventRecorder events;
  private final SchedulerMetrics metrics;
  private final Clock clock;
  private final Duration syncWait;
  private final Duration lockRetryTimeout;
  private final Executor binds;
  private final boolean placeCpuOnlyPods;
  private final @Nullable GrantSignature signer;
  /** KAI's dialect ({@code --kai-dialect}); null when off. */
  private final @Nullable DialectPods dialect;
  private final Duration gangHoldTimeout;
  /** Gangs reserved whole whose members are not all bound yet. */
  private final GangHolds gangHolds = new GangHolds();
  /** One gang decided at a time: a gang's members are counted and reserved together. */
  private final Object gangLock = new Object();
  private final NodeLockWaiters lockWaiters = new NodeLockWaiters();
  /**
   * What a bind that waited too long for the filter's write reports; one value, only its message read,
   * not made anew (with a stack trace) for every bind that waits.
   */
  private static final Throwable DECISION_WRITE_TIMED_OUT = new TimeoutException("not answered within the bind's time");
  /** The filter's decision writes still under way, which binds wait for. */
  private final DecisionWrites decisions = new DecisionWrites();
  /** The candidate list of the last filter call, resolved. */
  private volatile @Nullable CandidateNodes lastCandidates;

  /**
   * Wires the extender.
   *
   * @param engines builds a throw-away engine with the same configuration, for dry runs
   * @param syncWait how long a filter waits for the ledger's first sync before answering with an error
   * @param lockRetryTimeout how long a whole bind may take, its wait for a contended node lock and its writes
   * @param binds where binds continue once a node's lock is theirs
   * @param placeCpuOnlyPods whether pods without devices are placed by the policy too, instead of
   *     passing through
   * @param signer signs each grant the filter writes ({@link GrantSignature#ANNOTATION}); null writes
   *     none
   * @param dialect KAI's pod dialect, when this scheduler places it ({@code --kai-dialect}); null when not
   * @param gangHoldTimeout how long a gang's reservation waits for its members' binds
   */
  public Extender(
      KubernetesClient client,
      Engine engine,
      Supplier<Engine.Builder> engines,
      ClusterLedger ledger,
      Leadership leadership,
      PodRequestParser requests,
      NodeLock locks,
      EventRecorder events,
      SchedulerMetrics metrics,
      Clock clock,
      Duration syncWait,
      Duration lockRetryTimeout,
      Executor binds,
      boolean placeCpuOnlyPods,
      @Nullable GrantSignature signer,
      @Nullable DialectPods dialect,
      Duration gangHoldTimeout) {
    this.client = client;
    this.writes = new ApiWrites(client);
    this.engine = engine;
    this.engines = engines;
    this.ledger = ledger;
    this.leadership = leadership;
    this.requests = requests;
    this.locks = locks;
    this.events = events;
    this.metrics = metrics;
    this.clock = clock;
    this.syncWait = syncWait;
    this.lockRetryTimeout = lockRetryTimeout;
    this.binds = binds;
    this.placeCpuOnlyPods = placeCpuOnlyPods;
    this.signer = signer;
    this.dialect = dialect;
    this.gangHoldTimeout = gangHoldTimeout;
    ledger.onNodeLockReleased(lockWaiters::released);
    // A member that leaves (deleted) is no longer the hold's to release.
    ledger.onPodDeleted((ref, uid) -> gangHolds.bound(ref));
  }

  // ---------------------------------------------------------------------------------------------
  // Filter

  /** Answers one filter call. */
  public ExtenderFilterResult filter(ExtenderArgs args) {
    long start = System.nanoTime();
    ExtenderFilterResult result = doFilter(args, true);
    if (result == null) {
      throw new IllegalStateException("a filter that may wait gave no answer");
    }
    filtered(start, result);
    return result;
  }

  /**
   * Answers one filter call if that needs no waiting, else null, having changed nothing that {@link
   * #filter} would not do again: the caller then calls {@link #filter} where it may wait. Waiting is for
   * the ledger's first sync, and for what KAI's dialect and queue limits write while filtering; a synced
   * scheduler's ordinary pod needs none of it (its decision is written behind the answer).
   */
  public @Nullable ExtenderFilterResult filterAtOnce(ExtenderArgs args) {
    long start = System.nanoTime();
    ExtenderFilterResult result = doFilter(args, false);
    if (result != null) {
      filtered(start, result);
    }
    return result;
  }

  private void filtered(long start, ExtenderFilterResult result) {
    metrics.filtered(System.nanoTime() - start, result.error().isEmpty() && (result.nodeNames() != null || result.nodes() != null));
  }

  /** The answer; null only where {@code mayWait} is false and the answer would have to wait. */
  private @Nullable ExtenderFilterResult doFilter(ExtenderArgs args, boolean mayWait) {
    Pod pod = args.pod();
    if (pod == null || pod.getMetadata() == null) {
      return ExtenderFilterResult.error("extender args missing pod");
    }
    PodRequest request;
    boolean kai = dialect != null && dialect.speaks(pod);
    if (kai && !mayWait) {
      // Its gangs and its reasons to wait are written while it is filtered.
      return null;
    }
    try {
      request = requests.parse(pod);
      if (kai) {
        request = dialect.request(request, pod);
      }
    } catch (PodRequestException e) {
      return ExtenderFilterResult.error(e.getMessage());
    }
    // A dry run (node objects) of a pod without devices has nothing to evaluate: it holds no card.
    if (!request.wantsDevices() && (!placeCpuOnlyPods || args.nodes() != null)) {
      return new ExtenderFilterResult(args.nodes(), args.nodeNames(), null, null, "");
    }
    CompiledRequest compiled;
    try {
      compiled = engine.compile(request);
    } catch (IllegalArgumentException e) {
      return ExtenderFilterResult.error(e.getMessage());
    }
    if (args.nodes() != null) {
      // Where the pod's cards would fit: its queue's limit and its gang are the real filter's to judge.
      return dryRun(args.nodes(), request.withQueue(null));
    }
    if (!mayWait && !ledger.synced()) {
      return null;
    }
    if (!awaitSync()) {
      return ExtenderFilterResult.error("scheduler state is not synced yet");
    }
    if (!leadership.isLeader()) {
      return ExtenderFilterResult.error("this scheduler instance is not the leader");
    }
    List<String> candidates = args.nodeNames() == null ? List.of() : args.nodeNames();
    // kube-scheduler sends the same names with nearly every call: resolved once, not per call.
    CandidateNodes resolved = engine.candidates(candidates, lastCandidates);
    lastCandidates = resolved;
    if (!request.wantsDevices()) {
      return placeWithoutDevices(request, compiled, resolved);
    }
    PodRef ref = request.pod();
    String uid = pod.getMetadata().getUid() == null ? "" : pod.getMetadata().getUid();
    if (signer != null && uid.isEmpty()) {
      return ExtenderFilterResult.error("pod " + ref + " has no metadata.uid: its grant cannot be signed");
    }
    if (kai) {
      Optional<DialectPods.Gang> gang = dialect.gangOf(pod);
      if (gang.isPresent()) {
        Optional<ExtenderFilterResult> answer = filterGangMember(pod, ref, uid, compiled, resolved, gang.get());
        if (answer.isPresent()) {
          return answer.get();
        }
        // The gang holds its minimum already: this member is placed as a group of one.
      }
    }
    // A pod filtered again (a failed or retried bind) gives back what it held first, as in HAMi; so does
    // the name's previous pod, which kube-scheduler could not be asking about were it not gone.
    ledger.filtering(ref, uid.isEmpty() ? null : uid);
    engine.release(ref);
    for (int attempt = 0; attempt < RESERVE_ATTEMPTS; attempt++) {
      FilterResult result = filterForAnswer(engine, compiled, resolved, MESSAGE_NODES);
      if (result.waiting().isPresent()) {
        if (!mayWait) {
          // Its reason is written on the pod first; nothing was reserved, so the call can start over.
          return null;
        }
        return waiting(pod, ref, uid, candidates, result.waiting().get());
      }
      if (result.placement().isEmpty()) {
        reportUnschedulable(pod, ref, compiled, candidates, result.rejections());
        return new ExtenderFilterResult(null, null, failedNodes(result.rejections()), null, "");
      }
      Placement placement = result.placement().get();
      ReserveResult reserved = engine.reserve(placement);
      if (reserved.status() == ReserveResult.Status.CONFLICT) {
        LOG.debug("pod {}: lost node {} to a concurrent reservation ({}); filtering again", ref, placement.node(), reserved.message());
        continue;
      }
      if (!reserved.reserved()) {
        return ExtenderFilterResult.error(reserved.message());
      }
      writeBehind(pod, placement.grant(), uid, kai);
      metrics.schedulable(ref);
      events.normal(pod, "FilteringSucceed", successMessage(candidates.size(), placement.node(), result.fitting(), result.fittingCount()));
      return new ExtenderFilterResult(null, List.of(placement.node()), null, null, "");
    }
    return ExtenderFilterResult.error("pod " + ref + ": every fitting node was taken by concurrent reservations; retry");
  }

  // ---------------------------------------------------------------------------------------------
  // KAI's dialect: pods that wait whatever the cards, and gangs

  /**
   * The answer for a pod that waits whatever the cards ({@link Waiting}): every candidate fails with one
   * line, {@code <Reason>: <message>}. When the reason is new for the pod it is written on the pod
   * ({@value KaiKeys#WAITING_ANNOTATION}) with a Warning Event whose reason is the word; a pod asked about
   * again for the same reason costs no write.
   */
  private ExtenderFilterResult waiting(Pod pod, PodRef ref, String uid, List<String> candidates, Waiting why) {
    String line = why.reason().word() + ": " + why.message();
    Map<String, String> failed = new LinkedHashMap<>();
    candidates.forEach(node -> failed.put(node, line));
    if (!line.equals(PodRefs.annotations(pod).get(KaiKeys.WAITING_ANNOTATION))) {
      ObjectNode patch = PodJson.mapper().createObjectNode();
      patch.putObject("metadata").putObject("annotations").put(KaiKeys.WAITING_ANNOTATION, line);
      try {
        writes.patchPod(ref.namespace(), ref.name(), patch.toString());
      } catch (KubernetesClientException e) {
        LOG.debug("pod {}: could not write why it waits: {}", ref, e.getMessage());
      }
      events.warning(pod, why.reason().word(), why.message());
    }
    metrics.unschedulable(ref, uid.isEmpty() ? null : uid, why.reason().word());
    return new ExtenderFilterResult(null, null, failed, null, "");
  }

  /**
   * Filters a member of a gang (a PodGroup with {@code minMember} above 1). A member the gang's
   * reservation already holds a grant for is answered with that grant's node. Otherwise, until the gang
   * has its minimum of members (pending and running, not ended, not being deleted) every member waits
   * ({@code GangIncomplete}); once it has, the members without a grant are reserved all at once ({@link
   * Engine#reserveGang}, on the candidate nodes that every one of them allows), each one's decision is
   * written on it as a single pod's would be (so that its bind, and a restarted scheduler, find it, and
   * kube-scheduler tries it again), and the gang is held until its members are bound or {@code
   * --gang-hold-timeout} passes. Empty when the gang already holds its minimum: the member is placed
   * alone.
   */
  private Optional<ExtenderFilterResult> filterGangMember(Pod pod, PodRef ref, String uid, CompiledRequest compiled, CandidateNodes candidates, DialectPods.Gang gang) {
    String gangName = gang.group().toString();
    synchronized (gangLock) {
      Optional<PodGrant> held = engine.grant(ref);
      if (held.isPresent() && gangHolds.gangOf(ref).isPresent()) {
        String node = held.get().node();
        if (!candidates.names().contains(node)) {
          return Optional.of(waiting(pod, ref, uid, candidates.names(),
              new Waiting(Waiting.Reason.GANG_INCOMPLETE, "gang " + gangName + " holds node " + node + " for this pod, which kube-scheduler did not offer")));
        }
        metrics.schedulable(ref);
        return Optional.of(new ExtenderFilterResult(null, List.of(node), null, null, ""));
      }
      if (gang.problem().isPresent()) {
        return Optional.of(waiting(pod, ref, uid, candidates.names(), new Waiting(Waiting.Reason.GANG_INCOMPLETE, gang.problem().get())));
      }
      List<Pod> members = new ArrayList<>();
      boolean self = false;
      for (Pod p : ledger.pods()) {
        if (DialectPods.member(p, gang.group()) && live(p)) {
          members.add(p);
          self |= PodRefs.of(p).equals(ref);
        }
      }
      int count = members.size() + (self ? 0 : 1);
      if (count < gang.minMember()) {
        return Optional.of(waiting(pod, ref, uid, candidates.names(),
            new Waiting(Waiting.Reason.GANG_INCOMPLETE, "gang " + gangName + " has " + count + " of its " + gang.minMember() + " members")));
      }
      // This pod holds nothing from here on (a retried bind's reservation is given back, as for one pod).
      ledger.filtering(ref, uid.isEmpty() ? null : uid);
      engine.release(ref);
      int holding = 0;
      List<Pod> others = new ArrayList<>();
      for (Pod member : members) {
        PodRef m = PodRefs.of(member);
        if (m.equals(ref)) {
          continue;
        }
        if (engine.grant(m).isPresent()) {
          holding++;
        } else {
          others.add(member);
        }
      }
      int needed = gang.minMember() - holding;
      if (needed <= 0) {
        return Optional.empty();
      }
      // The members as they came (by creation, then name), as simulate tries them; this pod among them.
      others.add(pod);
      others.sort(Comparator.comparing((Pod p) -> Optional.ofNullable(p.getMetadata().getCreationTimestamp()).orElse("")).thenComparing(p -> PodRefs.of(p).toString()));
      List<CompiledRequest> toPlace = new ArrayList<>();
      Map<PodRef, String> uids = new LinkedHashMap<>();
      List<Pod> fullMembers = new ArrayList<>();
      for (Pod member : others) {
        PodRef m = PodRefs.of(member);
        if (m.equals(ref)) {
          toPlace.add(compiled);
          uids.put(ref, uid);
          fullMembers.add(pod);
          continue;
        }
        // The cache keeps lean pods; a member's constraints and node selection are in its whole object.
        Pod full = client.pods().inNamespace(m.namespace()).withName(m.name()).get();
        if (full == null || !live(full)) {
          continue;
        }
        try {
          toPlace.add(engine.compile(dialect.request(requests.parse(full), full)));
        } catch (PodRequestException | IllegalArgumentException e) {
          LOG.info("gang {}: member {} cannot be placed: {}", gangName, m, e.getMessage());
          continue;
        }
        uids.put(m, Optional.ofNullable(full.getMetadata().getUid()).orElse(""));
        fullMembers.add(full);
      }
      List<String> nodes = new ArrayList<>();
      for (String node : candidates.names()) {
        Map<String, String> labels = ledger.node(node).map(n -> n.getMetadata().getLabels()).orElse(null);
        if (fullMembers.stream().allMatch(m -> NodeSelection.allows(m, node, labels == null ? Map.of() : labels))) {
          nodes.add(node);
        }
      }
      uids.forEach((m, u) -> ledger.filtering(m, u.isEmpty() ? null : u));
      GangResult result = engine.reserveGang(toPlace, needed, nodes);
      if (!result.reserved()) {
        return Optional.of(waiting(pod, ref, uid, candidates.names(), result.waitingReason().orElseThrow()));
      }
      List<PodRef> placed = new ArrayList<>();
      try {
        for (Placement p : result.placed()) {
          annotate(p.grant(), uids.getOrDefault(p.grant().pod(), ""), true);
          placed.add(p.grant().pod());
        }
      } catch (KubernetesClientException e) {
        result.placed().forEach(p -> engine.release(p.grant().pod()));
        events.warning(pod, "FilteringFailed", "writing gang " + gangName + "'s decisions failed: " + e.getMessage());
        return Optional.of(ExtenderFilterResult.error("gang " + gangName + ": writing the scheduling decisions failed: " + e.getMessage()));
      }
      gangHolds.hold(gangName, placed, System.nanoTime() + gangHoldTimeout.toNanos());
      LOG.info("gang {}: {} members reserved together ({} needed)", gangName, placed.size(), needed);
      Optional<Placement> mine = result.placed().stream().filter(p -> p.grant().pod().equals(ref)).findFirst();
      if (mine.isEmpty()) {
        // The gang holds its minimum without this member, which fits nowhere now.
        String why = result.refused().getOrDefault(ref, "fits on no node");
        Map<String, String> failed = new LinkedHashMap<>();
        candidates.names().forEach(node -> failed.put(node, why));
        events.warning(pod, "FilteringFailed", "gang " + gangName + " is reserved without this member: " + why);
        return Optional.of(new ExtenderFilterResult(null, null, failed, null, ""));
      }
      metrics.schedulable(ref);
      events.normal(pod, "FilteringSucceed", "gang " + gangName + " reserved together: " + placed.size() + " members; this one on " + mine.get().node());
      return Optional.of(new ExtenderFilterResult(null, List.of(mine.get().node()), null, null, ""));
    }
  }

  /** Not ended and not being deleted: a pod that counts as a member of its gang. */
  private static boolean live(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    return pod.getMetadata().getDeletionTimestamp() == null && !"Succeeded".equals(phase) && !"Failed".equals(phase);
  }

  /**
   * Gives back the reservations of gang members still not bound when their gang's hold has run out, so
   * that a gang whose members never all come back holds no card for ever. Returns how many.
   */
  public int expireGangHolds() {
    int released = 0;
    for (PodRef member : gangHolds.expire(System.nanoTime())) {
      if (ledger.giveBack(member, "its gang's reservation waited " + gangHoldTimeout.toSeconds() + " s for its members' binds")) {
        released++;
      }
    }
    return released;
  }

  /**
   * The GPU group labels KAI's binder writes on a pod that shares cards, for a pod of the dialect that
   * does: {@value KaiKeys#GPU_GROUP} = its card's UUID (vgpu's group is the card), or one {@code
   * runai-gpu-group/<uuid>} label per card of a fraction of several. Empty for any other pod.
   */
  private Map<String, String> groupLabels(Pod pod) {
    if (dialect == null || !dialect.speaks(pod) || !KaiGpuRequest.of(pod).shared()) {
      return Map.of();
    }
    String allocated = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_ALLOCATED);
    if (allocated == null || LeanStore.dropped(allocated)) {
      return Map.of();
    }
    Set<String> cards = new java.util.LinkedHashSet<>();
    try {
      DeviceListCodec.decode(allocated).forEach(container -> container.forEach(d -> cards.add(d.uuid())));
    } catch (IllegalArgumentException e) {
      return Map.of();
    }
    Map<String, String> labels = new LinkedHashMap<>();
    if (cards.size() == 1) {
      labels.put(KaiKeys.GPU_GROUP, cards.iterator().next());
    } else {
      cards.forEach(card -> labels.put(KaiKeys.MULTI_GPU_GROUP_PREFIX + card, card));
    }
    return labels;
  }

  /**
   * Picks the node of a pod that asks for no device: every feasible node without vGPU cards, else the
   * card node the pod's policy scores best, where its CPU is counted from now on (the pod informer
   * replaces that count once it sees the pod bound, or drops it when the pod is deleted).
   */
  private ExtenderFilterResult placeWithoutDevices(PodRequest request, CompiledRequest compiled, CandidateNodes candidates) {
    List<String> withoutCards = candidates.names().stream().filter(name -> !engine.hasNode(name)).toList();
    if (!withoutCards.isEmpty() || candidates.size() == 0) {
      return new ExtenderFilterResult(null, withoutCards, null, null, "");
    }
    Optional<Placement> placement = engine.filterResolved(compiled, candidates, false).placement();
    if (placement.isEmpty()) {
      // Nothing the policy prefers (a pod without devices fits every registered node): kube-scheduler chooses.
      return new ExtenderFilterResult(null, candidates.names(), null, null, "");
    }
    String node = placement.get().node();
    if (request.cpuMilli() >= 0) {
      engine.setPodCpu(request.pod(), node, request.cpuMilli());
    }
    LOG.debug("pod {} asks for no device: placed on {} by policy", request.pod(), node);
    return new ExtenderFilterResult(null, List.of(node), null, null, "");
  }

  private boolean awaitSync() {
    long deadline = System.nanoTime() + syncWait.toNanos();
    while (!ledger.synced()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return true;
  }

  /**
   * The decision HAMi writes into the pod during filter, and beside it the scheduler's signature of
   * the grant when {@code signature} is given.
   */
  static Map<String, String> annotations(PodGrant grant, String assignedTime, @Nullable GrantSignature signature, String podUid) {
    String devices = DeviceListCodec.encode(grant);
    Map<String, String> out = new LinkedHashMap<>();
    out.put(HamiAnnotations.ASSIGNED_NODE, grant.node());
    out.put(HamiAnnotations.ASSIGNED_TIME, assignedTime);
    out.put(HamiAnnotations.DEVICES_TO_ALLOCATE, devices);
    out.put(HamiAnnotations.DEVICES_ALLOCATED, devices);
    if (signature != null) {
      out.put(GrantSignature.ANNOTATION, signature.sign(podUid, grant.node(), devices));
    }
    return out;
  }

  /** The merge patch that writes the decision: the annotations and the node label, in one write. */
  static String decisionPatch(PodGrant grant, String assignedTime, @Nullable GrantSignature signature, String podUid) {
    return decisionPatch(grant, assignedTime, signature, podUid, false);
  }

  /**
   * As {@link #decisionPatch(PodGrant, String, GrantSignature, String)}; with {@code placedAfterWaiting}
   * it also removes the pod's {@value KaiKeys#WAITING_ANNOTATION}: a pod placed no longer waits.
   */
  static String decisionPatch(PodGrant grant, String assignedTime, @Nullable GrantSignature signature, String podUid, boolean placedAfterWaiting) {
    return mergePatch(decision(grant, assignedTime, signature, podUid, placedAfterWaiting));
  }

  /** What the decision sets on the pod: the annotations and the node label (and, after waiting, the waiting annotation removed). */
  static DecisionWrites.Decision decision(PodGrant grant, String assignedTime, @Nullable GrantSignature signature, String podUid, boolean placedAfterWaiting) {
    Map<String, @Nullable String> annotations = new LinkedHashMap<>(annotations(grant, assignedTime, signature, podUid));
    if (placedAfterWaiting) {
      annotations.put(KaiKeys.WAITING_ANNOTATION, null);
    }
    return new DecisionWrites.Decision(podUid, annotations, Map.of(HamiAnnotations.ASSIGNED_NODE, grant.node()));
  }

  /** The JSON merge patch that sets {@code decision} on a pod. */
  private static String mergePatch(DecisionWrites.Decision decision) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode metadata = patch.putObject("metadata");
    ObjectNode annotations = metadata.putObject("annotations");
    decision.annotations().forEach((key, value) -> {
      if (value == null) {
        annotations.putNull(key);
      } else {
        annotations.put(key, value);
      }
    });
    ObjectNode labels = metadata.putObject("labels");
    decision.labels().forEach(labels::put);
    return patch.toString();
  }

  /** Writes the decision; {@code waited}: the pod carries {@value KaiKeys#WAITING_ANNOTATION}, which goes. */
  private void annotate(PodGrant grant, String podUid, boolean waited) {
    writes.patchPod(grant.pod().namespace(), grant.pod().name(), decisionPatch(grant, Long.toString(clock.instant().getEpochSecond()), signer, podUid, waited));
  }

  /**
   * Writes the decision behind the filter's answer ({@link DecisionWrites}); the bind waits for it. When
   * the write fails the reservation is given back, unless the pod has been filtered again since, and a
   * {@code FilteringFailed} Event says so: the bind is refused and kube-scheduler filters the pod again.
   */
  private void writeBehind(Pod pod, PodGrant grant, String podUid, boolean waited) {
    PodRef ref = grant.pod();
    DecisionWrites.Decision decision = decision(grant, Long.toString(clock.instant().getEpochSecond()), signer, podUid, waited);
    String patch = mergePatch(decision);
    decisions.write(
        ref,
        decision,
        () -> writes.patchPodAsync(ref.namespace(), ref.name(), patch),
        failure -> {
          if (engine.grant(ref).filter(grant::equals).isPresent()) {
            engine.release(ref);
          }
          String why = "writing the scheduling decision failed: " + failure.getMessage() + "; the reservation on node " + grant.node() + " is given back";
          LOG.info("pod {}: {}", ref, why);
          events.warning(pod, "FilteringFailed", why);
        });
  }

  /**
   * Completes when the filter's write of the pod's decision is over (at once when none is under way),
   * with the write's failure if it failed: what a bind of the pod waits for.
   */
  CompletableFuture<Void> decisionWritten(PodRef ref) {
    return decisions.pending(ref);
  }

  /**
   * The filter's scan as its answer needs it: the first {@code listed} fitting nodes (those the Event
   * names) and the rejected ones counted. A placed pod is answered with its node alone, as HAMi answers
   * it (kube-scheduler reads FailedNodes only when no node is left), so each rejected node's reason is
   * worked out, by a second scan, only when nothing fits.
   */
  static FilterResult filterForAnswer(Engine engine, CompiledRequest compiled, CandidateNodes candidates, int listed) {
    FilterResult result = engine.filterResolved(compiled, candidates, listed, false);
    if (result.placement().isEmpty() && result.waiting().isEmpty()) {
      result = engine.filterResolved(compiled, candidates, listed, true);
    }
    return result;
  }

  static Map<String, String> failedNodes(List<NodeRejection> rejections) {
    Map<String, String> failed = new LinkedHashMap<>(rejections.size() * 4 / 3 + 1);
    ReasonCodec.Renderer reasons = new ReasonCodec.Renderer();
    for (NodeRejection r : rejections) {
      failed.put(r.node(), reasons.render(r));
    }
    return failed;
  }

  /**
   * HAMi's success message: {@code find fit node(n), k nodes not fit, j nodes fit(n1:score,...)}, naming
   * at most {@link #MESSAGE_NODES} of the fitting nodes (HAMi names them all: at thousands of nodes
   * that is formatting work, and bytes, the API server cuts off at 1024 characters).
   */
  static String successMessage(int candidates, String node, List<FilterResult.NodeScore> fitting, int fittingCount) {
    StringBuilder scores = new StringBuilder();
    int shown = Math.min(fitting.size(), MESSAGE_NODES);
    for (int i = 0; i < shown; i++) {
      FilterResult.NodeScore s = fitting.get(i);
      if (i > 0) {
        scores.append(',');
      }
      scores.append(s.node()).append(':').append(twoDecimals(Math.abs(s.score())));
    }
    if (fittingCount > shown) {
      scores.append(",... ").append(fittingCount - shown).append(" more");
    }
    return "find fit node(" + node + "), " + (candidates - fittingCount) + " nodes not fit, " + fittingCount + " nodes fit(" + scores + ")";
  }

  /** What {@code String.format("%.2f", value)} gives, without a Formatter per node. */
  static String twoDecimals(double value) {
    if (!Double.isFinite(value)) {
      return Double.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
    }
    return new BigDecimal(value).setScale(2, RoundingMode.HALF_UP).toPlainString();
  }

  /**
   * Records why the pod fits nowhere: HAMi's per-reason summary and, what HAMi cannot say, the
   * cheapest change that would make it fit.
   */
  private void reportUnschedulable(Pod pod, PodRef ref, CompiledRequest compiled, List<String> candidates, List<NodeRejection> rejections) {
    Map<String, List<String>> nodesByReason = new TreeMap<>();
    Map<String, Integer> weight = new LinkedHashMap<>();
    for (NodeRejection r : rejections) {
      for (String reason : reasonWords(r)) {
        nodesByReason.computeIfAbsent(reason, k -> new ArrayList<>()).add(r.node());
        weight.merge(reason, 1, Integer::sum);
      }
    }
    StringBuilder message = new StringBuilder();
    message.append("0/").append(candidates.size()).append(" nodes fit: ");
    message.append(nodesByReason.entrySet().stream()
        .map(e -> e.getValue().size() + " nodes " + e.getKey() + "(" + named(e.getValue()) + ")")
        .collect(Collectors.joining("; ")));
    Explanation explanation = engine.explain(compiled, candidates);
    explanation.nearest().ifPresent(fix -> message.append(". Nearest fit: node ").append(fix.node()).append(": ").append(fix.change()));
    events.warning(pod, "FilteringFailed", message.toString());
    String dominant = weight.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey).orElse("NoNodes");
    metrics.unschedulable(ref, pod.getMetadata().getUid(), dominant);
  }

  /** The nodes sorted, at most {@link #MESSAGE_NODES} of them named. */
  private static String named(List<String> nodes) {
    List<String> sorted = nodes.stream().sorted().toList();
    if (sorted.size() <= MESSAGE_NODES) {
      return String.join(",", sorted);
    }
    return String.join(",", sorted.subList(0, MESSAGE_NODES)) + ",... " + (sorted.size() - MESSAGE_NODES) + " more";
  }

  private static List<String> reasonWords(NodeRejection r) {
    return switch (r.kind()) {
      case UNREGISTERED -> List.of(ReasonCodec.NODE_UNREGISTERED);
      case INSUFFICIENT_DEVICES -> List.of(ReasonCodec.NODE_INSUFFICIENT_DEVICE);
      case DEVICES -> r.counts().keySet().stream().map(reason -> reason.word()).toList();
    };
  }

  /**
   * cluster-autoscaler's dry run: the candidate nodes as objects, possibly nodes that do not exist yet.
   * Evaluated on a throw-away engine holding those nodes and the grants the ledger holds on them.
   */
  private ExtenderFilterResult dryRun(NodeList nodes, PodRequest request) {
    Engine scratch = engines.get().build();
    List<String> candidates = new ArrayList<>();
    Map<String, String> failed = new LinkedHashMap<>();
    Set<String> names = new HashSet<>();
    for (Node node : nodes.getItems()) {
      String name = node.getMetadata().getName();
      candidates.add(name);
      String register = node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
      if (register == null) {
        continue;
      }
      try {
        scratch.upsertNode(new NodeDevices(name, NodeRegisterCodec.decode(register), Set.of()));
        names.add(name);
      } catch (IllegalArgumentException e) {
        failed.put(name, "unreadable " + HamiAnnotations.NODE_REGISTER + ": " + e.getMessage());
      }
    }
    for (PodGrant grant : engine.grants()) {
      if (names.contains(grant.node()) && !grant.pod().equals(request.pod())) {
        scratch.restore(grant);
      }
    }
    FilterResult result = scratch.filter(scratch.compile(request), candidates, true);
    failed.putAll(failedNodes(result.rejections()));
    Optional<Placement> placement = result.placement();
    if (placement.isEmpty()) {
      return new ExtenderFilterResult(null, null, failed, null, "");
    }
    NodeList chosen = new NodeList();
    nodes.getItems().stream().filter(n -> n.getMetadata().getName().equals(placement.get().node())).findFirst().ifPresent(n -> chosen.getItems().add(n));
    return new ExtenderFilterResult(chosen, null, failed.isEmpty() ? null : failed, null, "");
  }

  // ---------------------------------------------------------------------------------------------
  // Bind

  /**
   * Answers one bind call whose caller stays until it is answered. See {@link #bind(ExtenderBindingArgs,
   * CompletionStage)}.
   */
  public CompletableFuture<ExtenderBindingResult> bind(ExtenderBindingArgs args) {
    return bind(args, new CompletableFuture<>());
  }

  /**
   * Answers one bind call. The answer waits, without holding a thread, while the node's lock is held by
   * another pod whose handshake is under way; the whole bind, the wait and the writes, ends within the
   * lock retry timeout, and at once when {@code abandoned} completes (kube-scheduler gave up on the
   * request): a bind nobody waits for must not take the lock or post a Binding behind kube-scheduler's
   * back. Every refusal is a {@code BindingFailed} Event on the pod and one log line.
   *
   * @param abandoned completes when kube-scheduler's request is gone
   */
  public CompletableFuture<ExtenderBindingResult> bind(ExtenderBindingArgs args, CompletionStage<?> abandoned) {
    CompletableFuture<ExtenderBindingResult> result = bind(args, abandoned, true);
    if (result == null) {
      throw new IllegalStateException("a bind that may work on this thread gave no answer");
    }
    return result;
  }

  /**
   * As {@link #bind(ExtenderBindingArgs, CompletionStage)} where the bind's work is left to the bind
   * threads, as it is while the filter's write of the pod's decision is still on its way (the usual
   * case: kube-scheduler binds as soon as the filter answers); null, having done nothing, where it would
   * start on this thread (reading the pod, taking the node's lock), which may wait for the API server.
   */
  public @Nullable CompletableFuture<ExtenderBindingResult> bindWithoutWaiting(ExtenderBindingArgs args, CompletionStage<?> abandoned) {
    return bind(args, abandoned, false);
  }

  private @Nullable CompletableFuture<ExtenderBindingResult> bind(ExtenderBindingArgs args, CompletionStage<?> abandoned, boolean mayWorkHere) {
    long start = System.nanoTime();
    // The wait leaves the writes a moment of the timeout: the whole bind ends within it.
    long waitUntil = start + lockRetryTimeout.toNanos() - Math.min(WRITE_ALLOWANCE.toNanos(), lockRetryTimeout.toNanos() / 4);
    @Nullable PodRef pod = args.podName() == null || args.podNamespace() == null ? null : new PodRef(args.podNamespace(), args.podName());
    CompletableFuture<Void> decision = pod == null ? CompletableFuture.completedFuture(null) : decisions.pending(pod);
    CompletableFuture<ExtenderBindingResult> result;
    if (decision.isDone() && !decision.isCompletedExceptionally()) {
      if (!mayWorkHere) {
        return null;
      }
      result = bindNow(args, waitUntil, abandoned);
    } else {
      // The filter's write of the decision is still on its way: the bind reads the pod once it is over.
      long wait = Math.max(0, waitUntil - System.nanoTime());
      result = Timeouts.completeOnTimeout(decision.handle((ok, failure) -> failure), DECISION_WRITE_TIMED_OUT, wait, TimeUnit.NANOSECONDS)
          .thenComposeAsync(
              failure -> failure == null
                  ? bindNow(args, waitUntil, abandoned)
                  : done("pod " + args.podNamespace() + "/" + args.podName() + ": its scheduling decision was not written (" + failure.getMessage() + "); it is filtered again"),
              binds);
    }
    return result.whenComplete((r, e) -> {
      if (pod != null) {
        decisions.forget(pod);
      }
      boolean ok = e == null && r.error().isEmpty();
      if (e == null && !ok) {
        LOG.info("bind of pod {}/{} to node {} refused: {}", args.podNamespace(), args.podName(), args.node(), r.error());
      }
      metrics.bound(System.nanoTime() - start, ok);
    });
  }

  private CompletableFuture<ExtenderBindingResult> bindNow(ExtenderBindingArgs args, long deadline, CompletionStage<?> abandoned) {
    try {
      return doBind(args, deadline, abandoned.toCompletableFuture());
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  private CompletableFuture<ExtenderBindingResult> doBind(ExtenderBindingArgs args, long deadline, CompletableFuture<?> abandoned) {
    if (args.podName() == null || args.podNamespace() == null || args.node() == null) {
      return done("bind args need PodName, PodNamespace and Node");
    }
    if (!leadership.isLeader()) {
      return done("this scheduler instance is not the leader");
    }
    PodRef ref = new PodRef(args.podNamespace(), args.podName());
    String nodeName = args.node();
    Pod pod;
    try {
      pod = podToBind(ref, nodeName);
    } catch (KubernetesClientException e) {
      return done("get pod " + ref + ": " + e.getMessage());
    }
    if (pod == null) {
      engine.release(ref);
      return done("pod " + ref + " not found");
    }
    String podUid = pod.getMetadata().getUid();
    String uid = args.podUid() == null || args.podUid().isEmpty() ? podUid : args.podUid();
    if (podUid != null && !podUid.equals(uid)) {
      return refused(pod, "pod " + ref + " is now the pod with UID " + podUid + ", not the one kube-scheduler binds (" + uid + ")");
    }
    if (ledger.node(nodeName).isEmpty() && client.nodes().withName(nodeName).get() == null) {
      engine.release(ref);
      return refused(pod, "node " + nodeName + " not found");
    }
    // Decided by the spec, which the pod's owner cannot change, never by annotations, which it can: a
    // pod without devices binds without the node's lock whatever it carries.
    if (!asksForDevices(pod)) {
      return CompletableFuture.completedFuture(post(pod, ref, nodeName, uid, false));
    }
    String held = Optional.ofNullable(PodRefs.annotations(pod).get(HamiAnnotations.ASSIGNED_NODE)).orElse("");
    if (held.isEmpty()) {
      // Bound without a grant, it would reach kubelet with no cards assigned: refuse, and kube-scheduler filters it again.
      return refused(pod, "pod " + ref + " asks for GPUs but holds no decision of this scheduler's filter (" + HamiAnnotations.ASSIGNED_NODE + ")");
    }
    if (!held.equals(nodeName)) {
      return refused(pod, "pod " + ref + " was filtered to node " + held + ", not " + nodeName);
    }
    String problem;
    try {
      problem = holdReservation(pod, ref, uid, nodeName);
    } catch (KubernetesClientException e) {
      problem = "pod " + ref + ": " + e.getMessage();
    } catch (RuntimeException e) {
      ledger.bindEnded(ref);
      throw e;
    }
    if (problem != null) {
      ledger.bindEnded(ref);
      return refused(pod, problem);
    }
    Function<Void, ExtenderBindingResult> posting = locked -> {
      // The wait is over, but nobody may be waiting for the answer any more.
      if (abandoned.isDone()) {
        locks.release(nodeName, ref, false);
        throw new CompletionException(new BindAbandonedException());
      }
      return post(pod, ref, nodeName, uid, true);
    };
    CompletableFuture<Void> lock = lock(ref, nodeName, deadline, null, abandoned);
    // A lock taken at once is posted on this thread, which already waited for the lock's write; only a
    // bind that waited for its turn continues on a bind thread.
    CompletableFuture<ExtenderBindingResult> posted = lock.isDone() ? lock.thenApply(posting) : lock.thenApplyAsync(posting, binds);
    return posted
        .exceptionally(e -> {
          Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          if (!(cause instanceof NodeLock.ContentionException) && !(cause instanceof KubernetesClientException) && !(cause instanceof BindAbandonedException)) {
            throw e instanceof CompletionException c ? c : new CompletionException(cause);
          }
          events.warning(pod, "BindingFailed", cause.getMessage());
          return new ExtenderBindingResult(cause.getMessage());
        })
        .whenComplete((r, e) -> ledger.bindEnded(ref));
  }

  /** kube-scheduler's request for the bind is gone: it gave up waiting and will filter the pod again. */
  static final class BindAbandonedException extends Exception {
    private static final long serialVersionUID = 1L;

    BindAbandonedException() {
      super("kube-scheduler gave up on the bind request while it waited for the node's lock: not bound, the pod is filtered again");
    }
  }

  /**
   * Checks that the engine still holds the reservation the pod's annotations name (the reaper may
   * have given it back, or the scheduler restarted while the bind was on its way) and pins it for the
   * bind; one given back is reserved again if it still fits. Returns why the bind must be refused, or
   * null.
   */
  private @Nullable String holdReservation(Pod pod, PodRef ref, @Nullable String uid, String nodeName) {
    String allocated = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_ALLOCATED);
    if (allocated == null || LeanStore.dropped(allocated)) {
      return "pod " + ref + " holds no readable " + HamiAnnotations.DEVICES_ALLOCATED;
    }
    PodGrant annotated;
    try {
      annotated = DeviceListCodec.decodeGrant(ref, nodeName, allocated, names(pod.getSpec().getInitContainers()), names(pod.getSpec().getContainers()));
    } catch (IllegalArgumentException e) {
      return "pod " + ref + ": " + HamiAnnotations.DEVICES_ALLOCATED + " is unreadable: " + e.getMessage();
    }
    ClusterLedger.BindHold hold = ledger.holdForBind(ref, uid, annotated);
    if (hold == ClusterLedger.BindHold.HELD) {
      return null;
    }
    if (hold == ClusterLedger.BindHold.DIFFERENT) {
      return "pod " + ref + ": its " + HamiAnnotations.DEVICES_ALLOCATED + " is not the reservation this scheduler holds for it";
    }
    if (signer != null && !signedAsAnnotated(ref, uid, nodeName, allocated)) {
      return "pod " + ref + ": its reservation was given back, and its grant is not the one this scheduler signed";
    }
    ReserveResult again = ledger.reserveForBind(ref, uid, annotated, queueOf(pod));
    if (!again.reserved()) {
      return "pod " + ref + ": its reservation on node " + nodeName + " was given back and no longer fits: " + again.message();
    }
    LOG.info("pod {}: its reservation on node {} was given back before the bind; reserved again", ref, nodeName);
    return null;
  }

  /** The queue a pod's grant is charged to: its KAI queue for a pod of the dialect, else none. */
  @Nullable String queueOf(Pod pod) {
    return dialect != null && dialect.speaks(pod) ? dialect.queueOf(pod) : null;
  }

  /** Whether the pod as the API server has it now carries this grant with the scheduler's signature. */
  private boolean signedAsAnnotated(PodRef ref, @Nullable String uid, String nodeName, String allocated) {
    GrantSignature signature = signer;
    if (signature == null || uid == null) {
      return signature == null;
    }
    Pod fresh = client.pods().inNamespace(ref.namespace()).withName(ref.name()).get();
    if (fresh == null) {
      return false;
    }
    Map<String, String> annotations = PodRefs.annotations(fresh);
    String signed = annotations.get(GrantSignature.ANNOTATION);
    return allocated.equals(annotations.get(HamiAnnotations.DEVICES_ALLOCATED))
        && nodeName.equals(annotations.get(HamiAnnotations.ASSIGNED_NODE))
        && signed != null
        && signature.verifies(uid, nodeName, allocated, signed);
  }

  private static List<String> names(@Nullable List<Container> containers) {
    return containers == null ? List.of() : containers.stream().map(c -> c.getName() == null ? "" : c.getName()).toList();
  }

  /** A refusal: a {@code BindingFailed} Event on the pod and the error kube-scheduler gets. */
  private CompletableFuture<ExtenderBindingResult> refused(Pod pod, String error) {
    events.warning(pod, "BindingFailed", error);
    return done(error);
  }

  /** Whether the pod asks for devices; one whose request cannot be read counts as asking (fail closed). */
  private boolean asksForDevices(Pod pod) {
    try {
      return requests.asksForDevices(pod);
    } catch (PodRequestException e) {
      return true;
    }
  }

  private static CompletableFuture<ExtenderBindingResult> done(String error) {
    return CompletableFuture.completedFuture(new ExtenderBindingResult(error));
  }

  /**
   * The pod as the informer holds it when that copy carries the filter's decision for this node; else
   * that copy as the filter's write for this node left it, when the write is the pod's latest and
   * succeeded (the usual case: kube-scheduler binds before the informer has seen the write); else as
   * the API server has it now.
   */
  private @Nullable Pod podToBind(PodRef ref, String nodeName) {
    Optional<Pod> cached = ledger.pod(ref);
    if (cached.isPresent()) {
      if (nodeName.equals(PodRefs.annotations(cached.get()).get(HamiAnnotations.ASSIGNED_NODE))) {
        return cached.get();
      }
      Optional<Pod> written =
          decisions.written(ref).filter(d -> nodeName.equals(d.annotations().get(HamiAnnotations.ASSIGNED_NODE))).flatMap(d -> d.onto(cached.get()));
      if (written.isPresent()) {
        return written.get();
      }
    }
    return client.pods().inNamespace(ref.namespace()).withName(ref.name()).get();
  }

  /**
   * Takes the node's lock for the pod, waiting in line while another pod holds it: the first in line
   * gets its turn when the informer sees the lock released, and looks again every second on its own
   * (an expired lock, a holder deleted or finished), until {@code deadline} or until kube-scheduler's
   * request is gone. A bind that finds others waiting joins the line without trying, so binds to one
   * node keep the order kube-scheduler sent them in.
   */
  private CompletableFuture<Void> lock(PodRef ref, String nodeName, long deadline, NodeLockWaiters.@Nullable Waiter waiter, CompletableFuture<?> abandoned) {
    if (abandoned.isDone()) {
      if (waiter != null) {
        lockWaiters.leave(waiter, false);
      }
      return CompletableFuture.failedFuture(new BindAbandonedException());
    }
    long seen = lockWaiters.releases(nodeName);
    boolean mayTry = waiter == null ? !lockWaiters.anyWaiting(nodeName) : lockWaiters.first(waiter);
    NodeLock.ContentionException contention;
    if (mayTry) {
      try {
        locks.acquire(nodeName, ref, ledger.node(nodeName).orElse(null));
        if (waiter != null) {
          lockWaiters.leave(waiter, true);
        }
        return CompletableFuture.completedFuture(null);
      } catch (NodeLock.ContentionException e) {
        contention = e;
      } catch (RuntimeException e) {
        if (waiter != null) {
          lockWaiters.leave(waiter, false);
        }
        return CompletableFuture.failedFuture(e);
      }
    } else {
      contention = locks.contention(nodeName);
    }
    long remaining = deadline - System.nanoTime();
    if (remaining <= 0) {
      if (waiter != null) {
        lockWaiters.leave(waiter, false);
      }
      return CompletableFuture.failedFuture(contention);
    }
    NodeLockWaiters.Waiter inLine = waiter != null ? waiter : lockWaiters.join(nodeName);
    LOG.debug("pod {} waits for the lock of node {}", ref, nodeName);
    CompletableFuture<Void> turn = lockWaiters.await(inLine, seen, Duration.ofNanos(Math.min(remaining, LOCK_LOOK_AGAIN.toNanos())));
    return CompletableFuture.anyOf(turn, abandoned).thenComposeAsync(next -> lock(ref, nodeName, deadline, inLine, abandoned), binds);
  }

  /**
   * Marks the pod {@code allocating} (with devices, under the node's lock) and posts the Binding. The
   * mark rides on the Binding, whose annotations the API server merges into the pod as it sets the pod's
   * node: one write instead of HAMi's patch and Binding, and the pod is never marked without being
   * bound. A pod that also gets KAI's GPU group labels, which a Binding cannot carry, is patched with them
   * and the mark first, as HAMi does.
   */
  private ExtenderBindingResult post(Pod pod, PodRef ref, String nodeName, @Nullable String uid, boolean usesDevices) {
    try {
      Map<String, String> mark = Map.of();
      if (usesDevices) {
        mark = new LinkedHashMap<>();
        mark.put(HamiAnnotations.BIND_PHASE, "allocating");
        mark.put(HamiAnnotations.BIND_TIME, Long.toString(clock.instant().getEpochSecond()));
        Map<String, String> groups = groupLabels(pod);
        if (!groups.isEmpty()) {
          ObjectNode patch = PodJson.mapper().createObjectNode();
          ObjectNode metadata = patch.putObject("metadata");
          mark.forEach(metadata.putObject("annotations")::put);
          ObjectNode labels = metadata.putObject("labels");
          groups.forEach(labels::put);
          writes.patchPod(ref.namespace(), ref.name(), patch.toString());
          mark = Map.of();
        }
      }
      writes.create(ref.namespace(), "bindings", bindingJson(ref, uid, nodeName, mark));
    } catch (KubernetesClientException e) {
      if (usesDevices) {
        locks.release(nodeName, ref, false);
      }
      events.warning(pod, "BindingFailed", e.getMessage());
      return new ExtenderBindingResult(e.getMessage());
    }
    gangHolds.bound(ref);
    events.normal(pod, "BindingSucceed", "bound to " + nodeName);
    return ExtenderBindingResult.OK;
  }

  /**
   * A core/v1 Binding of the pod to the node, carrying {@code annotations} for the pod (none: no
   * annotations object); the pod's UID, when known, makes the API server refuse it for another pod of
   * the same name.
   */
  static String bindingJson(PodRef ref, @Nullable String uid, String nodeName, Map<String, String> annotations) {
    StringWriter out = new StringWriter(256);
    try (JsonGenerator g = PodJson.mapper().createGenerator(out)) {
      g.writeStartObject();
      g.writeStringProperty("apiVersion", "v1");
      g.writeStringProperty("kind", "Binding");
      g.writeObjectPropertyStart("metadata");
      g.writeStringProperty("name", ref.name());
      g.writeStringProperty("namespace", ref.namespace());
      if (uid != null) {
        g.writeStringProperty("uid", uid);
      }
      if (!annotations.isEmpty()) {
        g.writeObjectPropertyStart("annotations");
        for (Map.Entry<String, String> a : annotations.entrySet()) {
          g.writeStringProperty(a.getKey(), a.getValue());
        }
        g.writeEndObject();
      }
      g.writeEndObject();
      g.writeObjectPropertyStart("target");
      g.writeStringProperty("apiVersion", "v1");
      g.writeStringProperty("kind", "Node");
      g.writeStringProperty("name", nodeName);
      g.writeEndObject();
      g.writeEndObject();
    }
    return out.toString();
  }
}
