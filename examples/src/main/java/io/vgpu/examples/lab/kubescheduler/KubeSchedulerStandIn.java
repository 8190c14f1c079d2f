package io.vgpu.examples.lab.kubescheduler;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.apiserver.EventWriter;
import io.vgpu.k8s.kubescheduler.FeasibleNodes;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.io.IOException;
import java.net.URI;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.HashSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.node.ObjectNode;

/**
 * The lab's kube-scheduler: holds the leader election Lease as kube-scheduler writes it ({@code
 * <hostname>_<uuid>}, the hostname being the scheduler pod's name), and schedules the pods of its
 * profiles one at a time, oldest first, as kube-scheduler does with an extender configured by the
 * reference deployment: its own node filters (node selector, required node affinity, unschedulable
 * nodes), then — for pods that request a managed resource — the extender's filter with the candidate
 * node names and the extender's bind; other pods are bound to the first candidate through the API.
 * Unschedulable pods wait for a change in the cluster (a pod deleted or finished, a node or quota
 * changed) and are then tried again; failed binds are retried after a back-off.
 *
 * <p>Deliberate deviations, so that the lab agrees with {@code vgpu simulate}: candidates go to the
 * extender in the scenario's node order and the first node it accepts is chosen. Which nodes are
 * candidates follows kube-scheduler's {@code percentageOfNodesToScore} ({@link FeasibleNodes}): below 100
 * nodes, and with the chart's 100, every feasible node, in that order.
 *
 * <p>{@link #defaultScheduler} makes the cluster's own scheduler from the same machinery: the pods that
 * name {@code default-scheduler}, bound to the first node their node selection allows, no extender.
 *
 * <p>The lab binds each pod before it schedules the next. With {@link BindingCycle#parallel} the stand-in
 * works as kube-scheduler's scheduling and binding cycles do: the scheduling cycle (the extender's filter)
 * takes one pod at a time from the pods the informer holds, and each pod's bind runs on its own, up to a
 * number of binds in flight, while the next pod is filtered; a pod being bound waits for nothing else.
 */
public final class KubeSchedulerStandIn implements AutoCloseable {
  private static final long LEASE_SECONDS = 15;
  private static final long RENEW_MILLIS = 2_000;
  private static final long BACKOFF_START_MILLIS = 100;
  private static final long BACKOFF_MAX_MILLIS = 2_000;
  /** The scheduler name of the cluster's own scheduler, and the one the API server gives a pod that names none. */
  public static final String DEFAULT_SCHEDULER = "default-scheduler";

  private final KubernetesClient client;
  private final Set<String> schedulerNames;
  /** Resources that interest the extender (every pod's, when empty); the default scheduler leaves pods asking for them alone. */
  private final Set<String> managedResources;
  /** Absent for the default scheduler. */
  private final @Nullable ExtenderClient extender;
  private final @Nullable String leaseNamespace;
  private final @Nullable String leaseName;
  private final Supplier<List<String>> nodeOrder;
  /** Each profile's percentageOfNodesToScore by scheduler name (0: kube-scheduler's adaptive share). */
  private final Map<String, Integer> percentages;
  private final FeasibleNodes feasible = new FeasibleNodes();
  private final String holderIdentity;
  private final EventWriter events;
  private final SharedIndexInformer<Pod> pods;
  private final SharedIndexInformer<Node> nodes;
  private final SharedIndexInformer<ResourceQuota> quotas;
  private final @Nullable ScheduledExecutorService leases;
  private final BindingCycle cycle;
  private final @Nullable ExecutorService binders;
  private final @Nullable Semaphore bindSlots;
  private final Thread worker;
  private final Object lock = new Object();
  private final Map<String, Queued> queue = new LinkedHashMap<>();
  private final Set<String> seen = new HashSet<>();
  private final Set<String> gone = new HashSet<>();
  /** Pods the default scheduler leaves Pending, with why. */
  private final Map<String, Declined> declined = new LinkedHashMap<>();
  /** Pods bound by this scheduler: an informer update older than the binding does not queue them again. */
  private final Set<String> bound = new HashSet<>();
  /** Every pod bound, in order; shared with a default scheduler made beside this one (guarded by itself). */
  private final List<PodRef> placed;
  private long generation;
  private long sequence;
  private boolean busy;
  private int binding;
  private volatile boolean closed;

  private enum State { ACTIVE, UNSCHEDULABLE, BACKOFF, BINDING }

  /**
   * How binds run, and who hears how long the extender took.
   *
   * @param bindsInFlight 0: each pod is bound before the next is scheduled (the lab); k &gt; 0: up to k
   *     binds run beside the scheduling cycle, which waits only when k are in flight
   * @param timings told the duration of every extender call
   */
  public record BindingCycle(int bindsInFlight, ExtenderTimings timings) {
    /** The lab's: bind, then schedule the next pod. */
    public static final BindingCycle SERIAL = new BindingCycle(0, ExtenderTimings.NONE);

    /** Validates the count. */
    public BindingCycle {
      if (bindsInFlight < 0) {
        throw new IllegalArgumentException("bindsInFlight " + bindsInFlight + " is negative");
      }
    }

    /** Up to {@code bindsInFlight} binds beside the scheduling cycle, as kube-scheduler's binding goroutines. */
    public static BindingCycle parallel(int bindsInFlight, ExtenderTimings timings) {
      if (bindsInFlight < 1) {
        throw new IllegalArgumentException("bindsInFlight must be at least 1, got " + bindsInFlight);
      }
      return new BindingCycle(bindsInFlight, timings);
    }
  }

  /** Hears how long each extender call took, as kube-scheduler saw it (HTTPS and JSON included). */
  public interface ExtenderTimings {
    /** Hears nothing. */
    ExtenderTimings NONE = new ExtenderTimings() {
      @Override
      public void filtered(PodRef pod, long nanos, boolean placed) {}

      @Override
      public void bound(PodRef pod, String node, long nanos, String error) {}
    };

    /** A filter call returned; {@code placed} when it named a node. */
    void filtered(PodRef pod, long nanos, boolean placed);

    /** A bind call returned; {@code error} is empty on success. */
    void bound(PodRef pod, String node, long nanos, String error);
  }

  private record Declined(PodRef ref, String reason) {}

  /** A pod waiting to be scheduled. */
  private static final class Queued {
    final String uid;
    final PodRef ref;
    final long order;
    State state = State.ACTIVE;
    long attemptGeneration = -1;
    long retryAt;
    long backoff = BACKOFF_START_MILLIS;
    Map<String, String> reasons = Map.of();
    /** The pod's own object changed while it was being tried: the attempt's verdict may be stale. */
    boolean changedDuringAttempt;

    Queued(String uid, PodRef ref, long order) {
      this.uid = uid;
      this.ref = ref;
      this.order = order;
    }
  }

  /**
   * Starts the scheduler.
   *
   * @param extenderBase where the extender's urlPrefix points in the lab
   * @param tls the TLS context for the extender (trust, and a client certificate when configured)
   * @param nodeOrder the nodes in the scenario's order
   * @param schedulerHostname the hostname of kube-scheduler's pod: the vgpu scheduler pod's name
   */
  public KubeSchedulerStandIn(
      KubernetesClient client, KubeSchedulerConfig config, URI extenderBase, SSLContext tls, Supplier<List<String>> nodeOrder, String schedulerHostname) {
    this(client, config, extenderBase, tls, nodeOrder, schedulerHostname, BindingCycle.SERIAL);
  }

  /**
   * Starts the scheduler with a binding cycle of its own (see {@link BindingCycle}).
   *
   * @param extenderBase where the extender's urlPrefix points in the lab
   * @param tls the TLS context for the extender (trust, and a client certificate when configured)
   * @param nodeOrder the nodes in the scenario's order
   * @param schedulerHostname the hostname of kube-scheduler's pod: the vgpu scheduler pod's name
   * @param cycle how binds run
   */
  public KubeSchedulerStandIn(
      KubernetesClient client,
      KubeSchedulerConfig config,
      URI extenderBase,
      SSLContext tls,
      Supplier<List<String>> nodeOrder,
      String schedulerHostname,
      BindingCycle cycle) {
    this(client, cycle, config.schedulerNames(), config.extender().managedResources(), new ExtenderClient(config.extender(), extenderBase, tls), nodeOrder,
        schedulerHostname, config.leaseNamespace(), config.leaseName(), new ArrayList<>(), config.percentageOfNodesToScore());
  }

  private KubeSchedulerStandIn(
      KubernetesClient client,
      BindingCycle cycle,
      Set<String> schedulerNames,
      Set<String> managedResources,
      @Nullable ExtenderClient extender,
      Supplier<List<String>> nodeOrder,
      String schedulerHostname,
      @Nullable String leaseNamespace,
      @Nullable String leaseName,
      List<PodRef> placed,
      Map<String, Integer> percentages) {
    this.client = client;
    this.percentages = Map.copyOf(percentages);
    this.cycle = cycle;
    this.binders = cycle.bindsInFlight() == 0 ? null : Executors.newFixedThreadPool(cycle.bindsInFlight(), r -> daemon(r, "lab-kube-scheduler-bind"));
    this.bindSlots = cycle.bindsInFlight() == 0 ? null : new Semaphore(cycle.bindsInFlight());
    this.schedulerNames = Set.copyOf(schedulerNames);
    this.managedResources = Set.copyOf(managedResources);
    this.extender = extender;
    this.nodeOrder = nodeOrder;
    this.placed = placed;
    this.holderIdentity = schedulerHostname + "_" + UUID.randomUUID();
    this.events = new EventWriter(client, schedulerNames.iterator().next());
    this.leaseNamespace = leaseNamespace;
    this.leaseName = leaseName;
    if (leaseName != null) {
      this.leases = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "lab-kube-scheduler-lease"));
      this.leases.scheduleWithFixedDelay(this::renewLease, 0, RENEW_MILLIS, TimeUnit.MILLISECONDS);
    } else {
      this.leases = null;
    }
    this.nodes = client.nodes().inform(changes(n -> true), 0);
    this.quotas = client.resourceQuotas().inAnyNamespace().inform(changes(q -> true), 0);
    this.pods = client.pods().inAnyNamespace().inform(new PodHandler(), 0);
    this.worker = new Thread(this::run, extender == null ? "lab-default-scheduler" : "lab-kube-scheduler");
    this.worker.setDaemon(true);
    this.worker.start();
  }

  /**
   * The cluster's own scheduler beside {@code vgpu}'s kube-scheduler (LAB.md, "Other schedulers"): it
   * schedules the pods that name {@code default-scheduler}, or no scheduler, as this class does without
   * an extender — node selector and required node affinity, then a Binding to the first node in the
   * scenario's order, as {@code vgpu simulate} places pods without GPUs. A pod that asks for a resource
   * the extender manages is left Pending with a reason: the webhook hands every such pod to {@code
   * vgpu}'s scheduler, and one that kept {@code default-scheduler} bypassed it. It holds no Lease
   * (nothing in the lab reads the control plane's) and records its placements in {@code beside}'s list,
   * so that both schedulers' placements read in the order they happened.
   *
   * @param client the client it posts Bindings with, as the default scheduler's identity
   * @param beside {@code vgpu}'s kube-scheduler, whose node order, managed resources and placement list it shares
   */
  public static KubeSchedulerStandIn defaultScheduler(KubernetesClient client, KubeSchedulerStandIn beside) {
    return new KubeSchedulerStandIn(
        client, BindingCycle.SERIAL, Set.of(DEFAULT_SCHEDULER), beside.managedResources, null, beside.nodeOrder, "default-scheduler", null, null, beside.placed, Map.of());
  }

  /**
   * The cluster's own scheduler where vgpu runs no kube-scheduler (under KAI Scheduler): as {@link
   * #defaultScheduler(KubernetesClient, KubeSchedulerStandIn)}, with no resource left to an extender and
   * a placement list of its own.
   *
   * @param nodeOrder the nodes in the scenario's order
   */
  public static KubeSchedulerStandIn defaultScheduler(KubernetesClient client, Supplier<List<String>> nodeOrder) {
    return new KubeSchedulerStandIn(client, BindingCycle.SERIAL, Set.of(DEFAULT_SCHEDULER), Set.of(), null, nodeOrder, "default-scheduler", null, null, new ArrayList<>(), Map.of());
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  /** The Lease holder this scheduler writes. */
  public String holderIdentity() {
    return holderIdentity;
  }

  /** A count of the cluster changes that can make an unschedulable pod fit. */
  public long generation() {
    synchronized (lock) {
      return generation;
    }
  }

  /**
   * Whether the scheduler has nothing left to do until the cluster changes: no pod being scheduled, and
   * every waiting pod found unschedulable since the last change.
   */
  public boolean idle() {
    synchronized (lock) {
      if (busy || binding > 0) {
        return false;
      }
      for (Queued q : queue.values()) {
        if (q.state != State.UNSCHEDULABLE || q.attemptGeneration != generation) {
          return false;
        }
      }
      return true;
    }
  }

  /** What keeps the scheduler busy, for a settle timeout's message. */
  public List<String> pendingWork() {
    synchronized (lock) {
      List<String> out = new ArrayList<>();
      if (busy) {
        out.add("kube-scheduler is scheduling a pod");
      }
      if (binding > 0) {
        out.add("kube-scheduler is binding " + binding + " pods");
      }
      for (Queued q : queue.values()) {
        if (q.state != State.UNSCHEDULABLE || q.attemptGeneration != generation) {
          out.add(q.ref + " waits to be scheduled (" + q.state.name().toLowerCase() + ")");
        }
      }
      return out;
    }
  }

  /** Whether this scheduler has seen the pod with this UID (so its {@link #idle} accounts for it). */
  public boolean seen(String uid) {
    synchronized (lock) {
      return seen.contains(uid);
    }
  }

  /** Whether this scheduler has seen the pod with this UID deleted. */
  public boolean seenDeleted(String uid) {
    synchronized (lock) {
      return gone.contains(uid);
    }
  }

  /** The pods this scheduler bound, in order (and those of a default scheduler made beside it). */
  public List<PodRef> placed() {
    synchronized (placed) {
      return List.copyOf(placed);
    }
  }

  /**
   * Tries every unschedulable pod again, as kube-scheduler's periodic flush of pods that stayed
   * unschedulable does (after {@code podMaxInUnschedulablePodsDuration}, 5 minutes): the lab calls it at
   * once when it knows that the extender has caught up with a change kube-scheduler may have reacted to
   * before the extender saw it.
   */
  public void retryUnschedulable() {
    clusterChanged();
  }

  /**
   * Why the last attempt did not place the pod: per node, the extender's reason or kube-scheduler's own
   * (key {@code ""} for a reason that names no node).
   */
  public Map<String, String> reasons(PodRef pod) {
    synchronized (lock) {
      for (Queued q : queue.values()) {
        if (q.ref.equals(pod)) {
          return q.reasons;
        }
      }
      for (Declined d : declined.values()) {
        if (d.ref().equals(pod)) {
          return Map.of("", d.reason());
        }
      }
      return Map.of();
    }
  }

  // --- Informers

  private <T> ResourceEventHandler<T> changes(Predicate<T> relevant) {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(T obj) {
        clusterChanged();
      }

      @Override
      public void onUpdate(T before, T after) {
        if (relevant.test(after)) {
          clusterChanged();
        }
      }

      @Override
      public void onDelete(T obj, boolean finalStateUnknown) {
        clusterChanged();
      }
    };
  }

  private void clusterChanged() {
    synchronized (lock) {
      generation++;
      for (Queued q : queue.values()) {
        if (q.state == State.UNSCHEDULABLE) {
          q.state = State.ACTIVE;
        }
      }
      lock.notifyAll();
    }
  }

  private final class PodHandler implements ResourceEventHandler<Pod> {
    @Override
    public void onAdd(Pod pod) {
      track(pod);
    }

    @Override
    public void onUpdate(Pod before, Pod after) {
      boolean wasDone = terminal(before);
      track(after);
      if (!wasDone && terminal(after)) {
        clusterChanged();
      } else if (metadataChanged(before, after)) {
        podChanged(after.getMetadata().getUid());
      }
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
      synchronized (lock) {
        queue.remove(pod.getMetadata().getUid());
        declined.remove(pod.getMetadata().getUid());
        gone.add(pod.getMetadata().getUid());
      }
      clusterChanged();
    }
  }

  /** Whether an update changed the pod's labels or annotations (not only its status or resource version). */
  private static boolean metadataChanged(Pod before, Pod after) {
    return !Objects.equals(orEmpty(before.getMetadata().getAnnotations()), orEmpty(after.getMetadata().getAnnotations()))
        || !Objects.equals(orEmpty(before.getMetadata().getLabels()), orEmpty(after.getMetadata().getLabels()));
  }

  private static Map<String, String> orEmpty(@Nullable Map<String, String> map) {
    return map == null ? Map.of() : map;
  }

  /**
   * An unschedulable pod whose own object changed is tried again, as kube-scheduler moves a pod out of its
   * unschedulable queue on an update of the pod; one being tried now is tried once more after.
   */
  private void podChanged(String uid) {
    synchronized (lock) {
      Queued q = queue.get(uid);
      if (q == null) {
        return;
      }
      if (q.state == State.UNSCHEDULABLE) {
        q.state = State.ACTIVE;
      } else {
        q.changedDuringAttempt = true;
      }
      lock.notifyAll();
    }
  }

  private static boolean terminal(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    return "Succeeded".equals(phase) || "Failed".equals(phase);
  }

  private void track(Pod pod) {
    String uid = pod.getMetadata().getUid();
    boolean waiting =
        pod.getSpec() != null
            && (pod.getSpec().getNodeName() == null || pod.getSpec().getNodeName().isEmpty())
            && schedulerNames.contains(Optional.ofNullable(pod.getSpec().getSchedulerName()).filter(n -> !n.isEmpty()).orElse(DEFAULT_SCHEDULER))
            && pod.getMetadata().getDeletionTimestamp() == null
            && !terminal(pod);
    Optional<String> managed = extender == null && waiting ? managedResource(pod) : Optional.empty();
    synchronized (lock) {
      seen.add(uid);
      if (managed.isPresent()) {
        declined.put(uid, new Declined(PodRefs.of(pod), "asks for " + managed.get() + ", which only vgpu's scheduler places; " + DEFAULT_SCHEDULER
            + " leaves it Pending (the webhook hands every such pod to vgpu's scheduler: this one kept " + DEFAULT_SCHEDULER + ")"));
        queue.remove(uid);
      } else if (!waiting || bound.contains(uid)) {
        declined.remove(uid);
        queue.remove(uid);
      } else if (!queue.containsKey(uid)) {
        queue.put(uid, new Queued(uid, PodRefs.of(pod), sequence++));
        lock.notifyAll();
      }
    }
  }

  // --- Scheduling

  private void run() {
    while (!closed) {
      Queued next;
      long attemptGeneration;
      synchronized (lock) {
        next = nextReady();
        if (next == null) {
          try {
            lock.wait(50);
          } catch (InterruptedException e) {
            return;
          }
          continue;
        }
        busy = true;
        attemptGeneration = generation;
      }
      try {
        schedule(next, attemptGeneration);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException | IOException e) {
        backOff(next, Map.of("", "scheduling error: " + e.getMessage()));
      } finally {
        synchronized (lock) {
          busy = false;
        }
      }
    }
  }

  private @Nullable Queued nextReady() {
    long now = System.currentTimeMillis();
    Queued best = null;
    for (Queued q : queue.values()) {
      boolean ready = q.state == State.ACTIVE || (q.state == State.BACKOFF && q.retryAt <= now);
      if (ready && (best == null || q.order < best.order)) {
        best = q;
      }
    }
    return best;
  }

  private void schedule(Queued queued, long attemptGeneration) throws IOException, InterruptedException {
    // kube-scheduler schedules the pod its informer delivered; the lab reads it afresh, as it binds in step.
    Pod pod =
        cycle.bindsInFlight() > 0
            ? pods.getStore().getByKey(queued.ref.namespace() + "/" + queued.ref.name())
            : client.pods().inNamespace(queued.ref.namespace()).withName(queued.ref.name()).get();
    if (pod == null || !queued.uid.equals(pod.getMetadata().getUid()) || (pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty())) {
      synchronized (lock) {
        queue.remove(queued.uid);
      }
      return;
    }
    Map<String, String> reasons = new LinkedHashMap<>();
    List<String> known = nodeOrder.get().stream().filter(name -> nodes.getStore().getByKey(name) != null).toList();
    String profile = Optional.ofNullable(pod.getSpec().getSchedulerName()).filter(n -> !n.isEmpty()).orElse(DEFAULT_SCHEDULER);
    // kube-scheduler stops filtering after percentageOfNodesToScore's share of feasible nodes.
    List<String> candidates = feasible.select(known, percentages.getOrDefault(profile, 0), name -> {
      Node node = nodes.getStore().getByKey(name);
      Map<String, String> labels = node == null || node.getMetadata().getLabels() == null ? Map.of() : node.getMetadata().getLabels();
      if (node != null && Boolean.TRUE.equals(node.getSpec() == null ? null : node.getSpec().getUnschedulable())) {
        return "NodeUnschedulable";
      }
      return NodeSelection.allows(pod, name, labels) ? null : "NodeSelectorMismatch";
    }, reasons);
    if (candidates.isEmpty()) {
      unschedulable(queued, pod, reasons, attemptGeneration);
      return;
    }
    if (extender == null || !interestsExtender(pod)) {
      bindDirectly(queued, pod, candidates.get(0));
      return;
    }
    long filterStart = System.nanoTime();
    ExtenderClient.Filtered filtered = extender.filter(pod, candidates);
    cycle.timings().filtered(queued.ref, System.nanoTime() - filterStart, filtered.error().isEmpty() && !filtered.nodeNames().isEmpty());
    if (!filtered.error().isEmpty()) {
      events.warning(pod, "FailedScheduling", "extender error: " + filtered.error());
      backOff(queued, Map.of("", filtered.error()));
      return;
    }
    reasons.putAll(filtered.failedNodes());
    Optional<String> chosen = candidates.stream().filter(filtered.nodeNames()::contains).findFirst();
    if (chosen.isEmpty()) {
      unschedulable(queued, pod, ordered(reasons), attemptGeneration);
      return;
    }
    if (binders == null || bindSlots == null) {
      bind(queued, pod, chosen.get());
      return;
    }
    bindSlots.acquire();
    synchronized (lock) {
      queued.state = State.BINDING;
      binding++;
    }
    binders.execute(() -> {
      try {
        bind(queued, pod, chosen.get());
      } catch (IOException | RuntimeException e) {
        backOff(queued, Map.of(chosen.get(), "binding error: " + e.getMessage()));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        synchronized (lock) {
          binding--;
          lock.notifyAll();
        }
        bindSlots.release();
      }
    });
  }

  private void bind(Queued queued, Pod pod, String node) throws IOException, InterruptedException {
    long bindStart = System.nanoTime();
    String error = extender.bind(pod, node);
    cycle.timings().bound(queued.ref, node, System.nanoTime() - bindStart, error);
    if (!error.isEmpty()) {
      events.warning(pod, "FailedScheduling", "binding rejected: " + error);
      backOff(queued, Map.of(node, error));
      return;
    }
    scheduled(queued, pod, node);
  }

  private Map<String, String> ordered(Map<String, String> reasons) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String name : nodeOrder.get()) {
      if (reasons.containsKey(name)) {
        out.put(name, reasons.get(name));
      }
    }
    return out;
  }

  /** As kube-scheduler decides it: an extender that names no managed resources is asked about every pod. */
  private boolean interestsExtender(Pod pod) {
    return managedResources.isEmpty() || managedResource(pod).isPresent();
  }

  /** The first resource the extender manages that one of the pod's containers asks for. */
  private Optional<String> managedResource(Pod pod) {
    List<Container> all = new ArrayList<>(pod.getSpec().getContainers());
    if (pod.getSpec().getInitContainers() != null) {
      all.addAll(pod.getSpec().getInitContainers());
    }
    for (Container c : all) {
      if (c.getResources() == null) {
        continue;
      }
      for (var resources : List.of(Optional.ofNullable(c.getResources().getLimits()), Optional.ofNullable(c.getResources().getRequests()))) {
        if (resources.isPresent()) {
          Optional<String> managed = resources.get().keySet().stream().filter(managedResources::contains).sorted().findFirst();
          if (managed.isPresent()) {
            return managed;
          }
        }
      }
    }
    return Optional.empty();
  }

  private void bindDirectly(Queued queued, Pod pod, String node) {
    Binding binding =
        new BindingBuilder()
            .withNewMetadata().withName(pod.getMetadata().getName()).withNamespace(pod.getMetadata().getNamespace()).withUid(pod.getMetadata().getUid()).endMetadata()
            .withNewTarget().withApiVersion("v1").withKind("Node").withName(node).endTarget()
            .build();
    try {
      client.bindings().inNamespace(pod.getMetadata().getNamespace()).resource(binding).create();
      scheduled(queued, pod, node);
    } catch (KubernetesClientException e) {
      events.warning(pod, "FailedScheduling", "binding rejected: " + e.getMessage());
      backOff(queued, Map.of(node, String.valueOf(e.getMessage())));
    }
  }

  private void scheduled(Queued queued, Pod pod, String node) {
    synchronized (lock) {
      queue.remove(queued.uid);
      bound.add(queued.uid);
    }
    synchronized (placed) {
      placed.add(queued.ref);
    }
    events.normal(pod, "Scheduled", "Successfully assigned " + queued.ref + " to " + node);
  }

  private void unschedulable(Queued queued, Pod pod, Map<String, String> reasons, long attemptGeneration) {
    int total = nodeOrder.get().size();
    StringBuilder message = new StringBuilder("0/" + total + " nodes are available:");
    reasons.forEach((node, reason) -> message.append(' ').append(node).append(": ").append(reason).append(';'));
    String text = message.toString().endsWith(";") ? message.substring(0, message.length() - 1) + "." : message + " no node was considered.";
    events.warning(pod, "FailedScheduling", text);
    markUnschedulable(pod, text);
    synchronized (lock) {
      queued.reasons = Collections.unmodifiableMap(new LinkedHashMap<>(reasons)); // in node order
      queued.state = State.UNSCHEDULABLE;
      queued.attemptGeneration = attemptGeneration;
      queued.backoff = BACKOFF_START_MILLIS;
      if (attemptGeneration != generation || queued.changedDuringAttempt) {
        queued.state = State.ACTIVE; // the cluster, or the pod itself, changed during the attempt
      }
      queued.changedDuringAttempt = false;
    }
  }

  private void markUnschedulable(Pod pod, String message) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    var condition = patch.putObject("status").putArray("conditions").addObject();
    condition.put("type", "PodScheduled");
    condition.put("status", "False");
    condition.put("reason", "Unschedulable");
    condition.put("message", message);
    condition.put("lastTransitionTime", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    try {
      client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).subresource("status")
          .patch(PatchContext.of(PatchType.STRATEGIC_MERGE), patch.toString());
    } catch (KubernetesClientException e) {
      // the condition is informational
    }
  }

  private void backOff(Queued queued, Map<String, String> reasons) {
    synchronized (lock) {
      queued.state = State.BACKOFF;
      queued.retryAt = System.currentTimeMillis() + queued.backoff;
      queued.backoff = Math.min(queued.backoff * 2, BACKOFF_MAX_MILLIS);
      queued.reasons = Collections.unmodifiableMap(new LinkedHashMap<>(reasons)); // in node order
    }
  }

  // --- Leader election

  private void renewLease() {
    if (leaseNamespace == null || leaseName == null) {
      return;
    }
    try {
      String now = ZonedDateTime.now(ZoneOffset.UTC).truncatedTo(ChronoUnit.MICROS).toString();
      Lease current = client.leases().inNamespace(leaseNamespace).withName(leaseName).get();
      if (current == null) {
        Lease lease =
            new LeaseBuilder()
                .withNewMetadata().withName(leaseName).withNamespace(leaseNamespace).endMetadata()
                .withNewSpec().withHolderIdentity(holderIdentity).withLeaseDurationSeconds((int) LEASE_SECONDS)
                .withAcquireTime(ZonedDateTime.now(ZoneOffset.UTC)).withRenewTime(ZonedDateTime.now(ZoneOffset.UTC)).withLeaseTransitions(0).endSpec()
                .build();
        client.leases().inNamespace(leaseNamespace).resource(lease).create();
        return;
      }
      current.getSpec().setHolderIdentity(holderIdentity);
      current.getSpec().setRenewTime(ZonedDateTime.parse(now));
      client.leases().inNamespace(leaseNamespace).resource(current).update();
    } catch (KubernetesClientException e) {
      // renewed at the next tick
    }
  }

  @Override
  public void close() {
    closed = true;
    worker.interrupt();
    if (binders != null) {
      binders.shutdownNow();
    }
    if (leases != null) {
      leases.shutdownNow();
    }
    pods.close();
    nodes.close();
    quotas.close();
  }
}
