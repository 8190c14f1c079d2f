package io.vgpu.k8s.watchdog;

import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.config.GoDurations;
import io.vgpu.k8s.config.WatchdogConfig;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.nvidia.HookLayout;
import java.time.InstantSource;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's second line of defence for memory grants. libvgpu.so inside each container refuses
 * allocations past the grant, but it runs in the container's own processes, which can get around it
 * (load the driver a second time, call it by a versioned symbol, rewrite the shared region). The
 * driver's accounting they cannot edit: every poll this reads what NVML charges to every process on
 * every card, finds each process's pod and container by its cgroup and the pod's container statuses,
 * sums per container and card, and holds the sum to the container's grant ({@link ContainerGrants}).
 * A container over its grant plus the tolerance for the grace period meets the configured action:
 * {@code kill} sends SIGKILL to its processes on that card, {@code report} leaves them running; either
 * way its pod gets a Warning Event naming the card, the grant and what NVML saw, the log one INFO line,
 * and {@code vgpu_container_memory_over_grant_total} one count.
 *
 * <p>A container of a pod that holds no grant (it never met vgpu's scheduler, say it set {@code
 * NVIDIA_VISIBLE_DEVICES=all} under NVIDIA's runtime, or its grant is not the scheduler's) is held to a
 * grant of 0 the same way and meets {@code ungranted.action}, with the Event reason {@value
 * #UNGRANTED_EVENT_REASON} and {@code vgpu_container_gpu_use_without_grant_total}.
 *
 * <p>A process it cannot hold to a pod's container (outside any pod, of a pod not on this node, of a
 * container kubelet has not reported) or of a pod in an exempt namespace is reported once, by log line
 * and {@code vgpu_unmapped_gpu_processes_total}, and never acted on. A card whose processes NVML cannot
 * list is a WARN once per episode and {@code vgpu_watchdog_unlisted_cards} 1 until it lists them again.
 * The per-pod counters forget a pod once it is gone from the node.
 */
public final class MemoryWatchdog implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(MemoryWatchdog.class);
  /** The reason of the Warning Event on a pod over its grant. */
  public static final String EVENT_REASON = "GpuMemoryOverGrant";

  /** The reason of the Warning Event on a pod that uses a card without a grant. */
  public static final String UNGRANTED_EVENT_REASON = "GpuUseWithoutGrant";

  /** Where the watchdog records what it did on a pod. */
  @FunctionalInterface
  public interface Events {
    /** Records a Warning Event on {@code pod}; best effort, never throws. */
    void warning(Pod pod, String reason, String message);
  }

  /** Why a GPU process is not held to any grant (the {@code reason} label). */
  enum Unmapped {
    NOT_A_POD("not-a-pod", "is in no pod's cgroup"),
    UNKNOWN_POD("unknown-pod", "is in the cgroup of a pod not on this node"),
    UNKNOWN_CONTAINER("unknown-container", "is in a container its pod's status does not list"),
    EXEMPT("exempt", "is in a pod of a namespace the watchdog exempts (watchdog.exemptNamespaces)");

    final String label;
    final String description;

    Unmapped(String label, String description) {
      this.label = label;
      this.description = description;
    }
  }

  private record ProcessOnCard(int pid, String deviceUuid) {}

  private record UsageKey(String podUid, String container, String deviceUuid) {}

  private final WatchdogConfig config;
  private final GpuProcesses gpus;
  private final Supplier<List<Pod>> pods;
  private final ContainerGrants grants;
  private final HostProcesses host;
  private final Events events;
  private final WatchdogMetrics metrics;
  private final InstantSource clock;
  private final OverGrantJudge judge;
  private final Set<ProcessOnCard> reportedUnmapped = new HashSet<>();
  /** Cards whose processes the last poll could not list: one WARN when an episode starts. */
  private final Set<String> unlistedCards = new HashSet<>();
  private volatile Map<UsageKey, Long> latest = Map.of();
  private @Nullable ScheduledExecutorService poller;

  /**
   * A watchdog; {@link #start} starts its polling thread, or a caller polls with {@link #poll}.
   *
   * @param pods the pods on this node
   * @param layout where this agent writes each container's limits file
   * @param grants which pod grants are the scheduler's
   * @param node this node's name
   */
  public MemoryWatchdog(
      WatchdogConfig config,
      GpuProcesses gpus,
      Supplier<List<Pod>> pods,
      HookLayout layout,
      PodGrants grants,
      String node,
      HostProcesses host,
      Events events,
      WatchdogMetrics metrics,
      InstantSource clock) {
    this(config, gpus, pods, layout, grants, node, null, host, events, metrics, clock);
  }

  /**
   * A watchdog that also holds containers to the whole cards they were given (the node agent under KAI
   * Scheduler), and KAI fraction containers to the grant files this agent wrote for them.
   *
   * @param wholeCards the whole cards each container holds; null for vgpu's own stack
   */
  public MemoryWatchdog(
      WatchdogConfig config,
      GpuProcesses gpus,
      Supplier<List<Pod>> pods,
      HookLayout layout,
      PodGrants grants,
      String node,
      @Nullable WholeCardGrants wholeCards,
      HostProcesses host,
      Events events,
      WatchdogMetrics metrics,
      InstantSource clock) {
    this.config = config;
    this.gpus = gpus;
    this.pods = pods;
    this.grants = new ContainerGrants(layout, grants, node, wholeCards);
    this.host = host;
    this.events = events;
    this.metrics = metrics;
    this.clock = clock;
    this.judge = new OverGrantJudge(config.toleranceBytes(), config.gracePeriod());
  }

  /** Starts polling every {@code pollInterval} on a thread of its own, so that no API call delays a kill. */
  public synchronized void start() {
    if (poller != null) {
      return;
    }
    poller =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "vgpu-watchdog");
              t.setDaemon(true);
              return t;
            });
    long interval = config.pollInterval().toNanos();
    poller.scheduleWithFixedDelay(this::pollLogged, 0, interval, TimeUnit.NANOSECONDS);
    LOG.info(
        "memory watchdog: {} a container over its grant + {} MiB for {}, {} one using a card without a grant (NVML polled every {}){}",
        config.action().key(), config.toleranceMiB(), GoDurations.format(config.gracePeriod()), config.ungrantedAction().key(),
        GoDurations.format(config.pollInterval()),
        config.exemptNamespaces().isEmpty() ? "" : "; namespaces " + String.join(", ", config.exemptNamespaces()) + " exempt");
  }

  private void pollLogged() {
    try {
      poll();
    } catch (RuntimeException e) {
      LOG.warn("memory watchdog poll failed: {}", HttpService.oneLine(String.valueOf(e.getMessage())));
    }
  }

  /**
   * What NVML charged to the container's processes on the card at the last poll, for the node
   * monitor: 0 for a container with none there.
   */
  public OptionalLong nvmlBytes(String podUid, String container, String deviceUuid) {
    return OptionalLong.of(latest.getOrDefault(new UsageKey(podUid, container, deviceUuid), 0L));
  }

  /** One poll: read NVML, map processes to containers, judge, act. Polls never overlap. */
  public void poll() {
    synchronized (judge) {
      pollOnce();
    }
  }

  private void pollOnce() {
    Instant now = clock.instant();
    GpuProcesses.Sample sample = gpus.sample();
    unlisted(sample.unlisted());
    List<GpuProcesses.GpuProcess> processes = sample.processes();
    PodIndex index = new PodIndex(processes.isEmpty() && !metrics.hasPodSeries() ? List.of() : pods.get());
    grants.newPoll();
    Map<String, ContainerGrants.Holding> holdings = new HashMap<>();
    Map<ContainerCard, long[]> bytes = new LinkedHashMap<>();
    Map<ContainerCard, List<Integer>> pids = new HashMap<>();
    Map<ContainerCard, KubeletCgroup> owners = new HashMap<>();
    Set<ProcessOnCard> unmappedNow = new HashSet<>();
    for (GpuProcesses.GpuProcess p : processes) {
      Optional<String> cgroup = host.cgroupOf(p.pid());
      if (cgroup.isEmpty()) {
        continue; // gone since NVML listed it
      }
      Optional<KubeletCgroup> owner = KubeletCgroup.ofProcFile(cgroup.get());
      Pod pod = owner.map(o -> index.pod(o.podUid())).orElse(null);
      boolean exempt = pod != null && config.exempts(PodRefs.of(pod).namespace());
      String container = pod == null || exempt ? null : index.containerName(pod, owner.get().containerId());
      if (container == null) {
        Unmapped reason = owner.isEmpty() ? Unmapped.NOT_A_POD : pod == null ? Unmapped.UNKNOWN_POD : exempt ? Unmapped.EXEMPT : Unmapped.UNKNOWN_CONTAINER;
        unmapped(p, reason, owner, unmappedNow);
        continue;
      }
      holdings.computeIfAbsent(owner.get().podUid() + "/" + container, k -> grants.of(pod, container));
      PodRef ref = PodRefs.of(pod);
      ContainerCard card = new ContainerCard(ref.namespace(), ref.name(), owner.get().podUid(), container, p.deviceUuid());
      bytes.computeIfAbsent(card, c -> new long[1])[0] += p.usedBytes();
      pids.computeIfAbsent(card, c -> new ArrayList<>()).add(p.pid());
      owners.putIfAbsent(card, owner.get());
    }
    reportedUnmapped.retainAll(unmappedNow);

    List<OverGrantJudge.Usage> usages = new ArrayList<>();
    Map<UsageKey, Long> snapshot = new HashMap<>();
    bytes.forEach((card, sum) -> {
      long grant = holdings.get(card.podUid() + "/" + card.container()) instanceof ContainerGrants.Held held ? held.bytes().getOrDefault(card.deviceUuid(), 0L) : 0;
      usages.add(new OverGrantJudge.Usage(card, sum[0], grant, pids.get(card)));
      snapshot.put(new UsageKey(card.podUid(), card.container(), card.deviceUuid()), sum[0]);
    });
    latest = Map.copyOf(snapshot);
    for (OverGrantJudge.Verdict verdict : judge.judge(now, usages)) {
      ContainerCard card = verdict.usage().card();
      act(verdict, holdings.get(card.podUid() + "/" + card.container()), owners.get(card), index.pod(card.podUid()));
    }
    if (metrics.hasPodSeries()) {
      metrics.forgetPodsOtherThan(index.refs());
    }
  }

  /** Starts and ends the episodes of cards whose processes NVML cannot list. */
  private void unlisted(Map<String, String> now) {
    for (Map.Entry<String, String> card : now.entrySet()) {
      if (unlistedCards.add(card.getKey())) {
        metrics.unlistedCards.labelValues(card.getKey()).set(1);
        LOG.warn("memory watchdog: NVML cannot list the processes on {} ({}): no process there is held to a grant until it can", card.getKey(), card.getValue());
      }
    }
    for (Iterator<String> i = unlistedCards.iterator(); i.hasNext(); ) {
      String card = i.next();
      if (!now.containsKey(card)) {
        i.remove();
        metrics.unlistedCards.labelValues(card).set(0);
        LOG.info("memory watchdog: NVML lists the processes on {} again", card);
      }
    }
  }

  private void unmapped(GpuProcesses.GpuProcess p, Unmapped reason, Optional<KubeletCgroup> owner, Set<ProcessOnCard> now) {
    ProcessOnCard key = new ProcessOnCard(p.pid(), p.deviceUuid());
    now.add(key);
    if (reportedUnmapped.add(key)) {
      metrics.unmapped.labelValues(p.deviceUuid(), reason.label).inc();
      LOG.info(
          "memory watchdog: GPU process {} on {} holding {} MiB {}{}: not held to any grant",
          p.pid(), p.deviceUuid(), p.usedBytes() >> 20, reason.description,
          owner.map(o -> " (pod UID " + o.podUid() + (o.hasContainer() ? ", container ID " + o.containerId() : "") + ")").orElse(""));
    }
  }

  private void act(OverGrantJudge.Verdict verdict, ContainerGrants.Holding holding, KubeletCgroup owner, Pod pod) {
    OverGrantJudge.Usage usage = verdict.usage();
    ContainerCard card = usage.card();
    boolean ungranted = holding instanceof ContainerGrants.Ungranted;
    String measured =
        String.format(
            Locale.ROOT,
            "NVML saw %d MiB on %s (pid %s) for %.1f s",
            usage.nvmlBytes() >> 20, card.deviceUuid(), usage.pids().stream().map(String::valueOf).collect(Collectors.joining(",")),
            verdict.overFor().toMillis() / 1000.0);
    String seen =
        holding instanceof ContainerGrants.Ungranted none
            ? measured + " without a grant (" + none.why() + "), over the " + config.toleranceMiB() + " MiB tolerance"
            : measured + ", over its grant of " + (usage.grantBytes() >> 20) + " MiB plus the " + config.toleranceMiB() + " MiB tolerance";
    WatchdogConfig.Action action = ungranted ? config.ungrantedAction() : config.action();
    String outcome;
    if (action == WatchdogConfig.Action.KILL) {
      List<Integer> killed = usage.pids().stream().filter(pid -> host.kill(pid, owner)).toList();
      outcome = killed.isEmpty() ? "no process left to kill" : "killed pid " + killed.stream().map(String::valueOf).collect(Collectors.joining(","));
    } else {
      outcome = "reported only (watchdog " + (ungranted ? "ungranted.action" : "action") + ": report)";
    }
    if (!verdict.firstOfEpisode()) {
      if (!usage.pids().isEmpty() && action == WatchdogConfig.Action.KILL) {
        LOG.info("memory watchdog: {} still {}: {}; {}", card, ungranted ? "uses a card without a grant" : "over its grant", seen, outcome);
      }
      return;
    }
    LOG.info("memory watchdog: {}: {}; {}", card, seen, outcome);
    metrics.count(ungranted, card.namespace(), card.pod(), card.container());
    if (pod != null) {
      events.warning(pod, ungranted ? UNGRANTED_EVENT_REASON : EVENT_REASON, "container " + card.container() + ": " + seen + "; " + outcome);
    }
  }

  /** Stops polling. */
  @Override
  public synchronized void close() {
    if (poller != null) {
      poller.shutdownNow();
      poller = null;
    }
  }

  /** The node's pods by UID, and each pod's container IDs by name, read once per poll. */
  private static final class PodIndex {
    private final Map<String, Pod> byUid = new HashMap<>();
    private final Map<String, Map<String, String>> containerIds = new HashMap<>();

    PodIndex(List<Pod> pods) {
      for (Pod pod : pods) {
        if (pod.getMetadata() != null && pod.getMetadata().getUid() != null && pod.getMetadata().getName() != null) {
          byUid.put(pod.getMetadata().getUid(), pod);
        }
      }
    }

    @Nullable Pod pod(String uid) {
      return byUid.get(uid);
    }

    /** Every pod as {@code namespace/name}. */
    Set<String> refs() {
      Set<String> out = new HashSet<>();
      for (Pod pod : byUid.values()) {
        PodRef ref = PodRefs.of(pod);
        out.add(ref.namespace() + "/" + ref.name());
      }
      return out;
    }

    /** The name of the container with this runtime ID, or null when kubelet has not reported it. */
    @Nullable String containerName(Pod pod, String containerId) {
      if (containerId.isEmpty()) {
        return null;
      }
      return containerIds.computeIfAbsent(pod.getMetadata().getUid(), uid -> idsOf(pod.getStatus())).get(containerId);
    }

    /** {@code containerd://<id>}, {@code cri-o://<id>}, {@code docker://<id>}: the ID after the scheme. */
    private static Map<String, String> idsOf(@Nullable PodStatus status) {
      Map<String, String> out = new HashMap<>();
      if (status == null) {
        return out;
      }
      List<ContainerStatus> all = new ArrayList<>();
      for (List<ContainerStatus> part : List.of(
          nonNull(status.getInitContainerStatuses()), nonNull(status.getContainerStatuses()), nonNull(status.getEphemeralContainerStatuses()))) {
        all.addAll(part);
      }
      for (ContainerStatus s : all) {
        String id = s.getContainerID();
        if (id != null && !id.isEmpty() && s.getName() != null) {
          int scheme = id.indexOf("://");
          out.put(scheme < 0 ? id : id.substring(scheme + 3), s.getName());
        }
      }
      return out;
    }

    private static List<ContainerStatus> nonNull(@Nullable List<ContainerStatus> list) {
      return list == null ? List.of() : list;
    }
  }
}
