package io.vgpu.core;

import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PlacementView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * The allocation engine: an in-memory ledger of nodes, their devices and the grants pods hold, which
 * answers where a pod fits ({@link #filter}), counts a placement ({@link #reserve}), returns it
 * ({@link #release}) and explains a pod that fits nowhere ({@link #explain}).
 *
 * <p>The fit rules, reason words and scores are HAMi's, decided in one place ({@link FitRule}) for the
 * filter, explain and reserve alike. Every node is an immutable snapshot of its devices' usage and of
 * the grants that usage sums, swapped with compare-and-set: filters read without locking; a
 * reservation is checked against the very snapshot it replaces, so it refuses exactly what a fresh
 * filter would and concurrent reservations can never over-commit a card; and a grant is counted in
 * the same atomic step that records it on its node, so none is lost or counted twice whatever order
 * registrations, restores, reservations and releases run in. The engine does no I/O and starts no
 * thread; it is safe for concurrent use.
 */
public final class Engine {
  private static final PlacementView NO_PLACEMENT =
      new PlacementView() {
        @Override
        public int containers() {
          return 0;
        }

        @Override
        public int cardCount(int c) {
          throw new IndexOutOfBoundsException(c);
        }

        @Override
        public int card(int c, int i) {
          throw new IndexOutOfBoundsException(c);
        }

        @Override
        public int memoryMiB(int c, int i) {
          throw new IndexOutOfBoundsException(c);
        }

        @Override
        public int cores(int c, int i) {
          throw new IndexOutOfBoundsException(c);
        }
      };

  /**
   * How many HAMi policies the engine keeps: every combination of node policy, device policy and NUMA
   * binding (a few hundred) with the default weights fits, and some with a pod's own.
   */
  static final int MAX_CACHED_HAMI_POLICIES = 512;

  private final EngineConfig config;
  private final RequestResolver resolver;
  private final Map<String, PlacementPolicyProvider> providers;
  private final Map<String, PlacementPolicy> namedPolicies = new ConcurrentHashMap<>();
  /**
   * HAMi policies by what they are (names read, not as annotations spelled them), at most {@link
   * #MAX_CACHED_HAMI_POLICIES}: the weights are a pod's to choose, so past the bound a request's policy
   * is made for it alone.
   */
  private final Map<HamiPolicy.Settings, HamiPolicy> hamiPolicies = new ConcurrentHashMap<>();
  /**
   * Every registered node, and every unregistered one on which grants are held (they count once it
   * registers). An entry whose snapshot is {@link NodeState#RETIRED} is on its way out of the map.
   */
  private final Map<String, AtomicReference<NodeState>> nodes = new ConcurrentHashMap<>();
  private final Object registrationLock = new Object();
  /**
   * Changes whenever an entry joins or leaves {@link #nodes} (after the change is visible), so a
   * {@link CandidateNodes} resolved before it is known to be stale.
   */
  private final AtomicLong membership = new AtomicLong();
  private volatile NodeList nodeList = new NodeList(List.of(), List.of());
  /** The grant each pod holds; the count itself lives in its node's snapshot. */
  private final Map<PodRef, PodUsage> pods = new ConcurrentHashMap<>();
  private final QuotaLedger quotas;
  private final QueueLedger queues = new QueueLedger();
  /** Gangs are placed one at a time, so two gangs never each hold part of what both need. */
  private final Object gangLock = new Object();
  private final CpuLedger cpu = new CpuLedger();
  /** Registered cards by type, kept under {@link #registrationLock}; {@link #registeredCards} is its published copy. */
  private final Map<String, Long> cardsByType = new HashMap<>();
  private volatile Map<String, Long> registeredCards = Map.of();
  private final WorkloadFeed workload;
  private final ThreadLocal<PodFitter> fitters = ThreadLocal.withInitial(PodFitter::new);

  /** Registration-ordered nodes, replaced whole when a node joins or leaves. */
  @SuppressWarnings("rawtypes")
  private static final class NodeList {
    final String[] names;
    final AtomicReference<NodeState>[] refs;

    @SuppressWarnings("unchecked")
    NodeList(List<String> names, List<AtomicReference<NodeState>> refs) {
      this.names = names.toArray(new String[0]);
      this.refs = refs.toArray(new AtomicReference[0]);
    }

    private NodeList(String[] names, AtomicReference<NodeState>[] refs) {
      this.names = names;
      this.refs = refs;
    }

    /** This list and one more node at its end. */
    NodeList with(String name, AtomicReference<NodeState> ref) {
      String[] n = Arrays.copyOf(names, names.length + 1);
      AtomicReference<NodeState>[] r = Arrays.copyOf(refs, refs.length + 1);
      n[names.length] = name;
      r[refs.length] = ref;
      return new NodeList(n, r);
    }
  }

  private Engine(EngineConfig config, Map<String, PlacementPolicyProvider> providers) {
    this.config = config;
    this.resolver = new RequestResolver(config.schema());
    this.providers = providers;
    this.quotas = new QuotaLedger(config.schema().effectiveMemoryFactor());
    // Every named policy exists from the start, so each learns from every grant counted.
    providers.forEach((name, provider) -> namedPolicies.put(name, provider.create()));
    namedPolicies.values().forEach(p -> p.cardTypesRegistered(Map.of()));
    this.workload = new WorkloadFeed(List.copyOf(namedPolicies.values()), cpu, () -> registeredCards.keySet());
  }

  /** An engine with HAMi's defaults and the placement policies found on the class path. */
  public static Engine create() {
    return builder().build();
  }

  /** Starts building an engine. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds an {@link Engine}. */
  public static final class Builder {
    private EngineConfig config = EngineConfig.DEFAULT;
    private final Map<String, PlacementPolicyProvider> providers = new LinkedHashMap<>();
    private boolean loadProviders = true;

    private Builder() {}

    /** Sets the configuration (default {@link EngineConfig#DEFAULT}). */
    public Builder config(EngineConfig value) {
      this.config = value;
      return this;
    }

    /** Adds a placement policy by provider, taking precedence over one of the same name found by {@link ServiceLoader}. */
    public Builder policy(PlacementPolicyProvider provider) {
      providers.put(provider.name(), provider);
      return this;
    }

    /** Whether to add the placement policies registered through {@link ServiceLoader} (default true). */
    public Builder loadPoliciesFromClassPath(boolean value) {
      this.loadProviders = value;
      return this;
    }

    /** Builds the engine. */
    public Engine build() {
      Map<String, PlacementPolicyProvider> all = new LinkedHashMap<>();
      if (loadProviders) {
        for (PlacementPolicyProvider p : ServiceLoader.load(PlacementPolicyProvider.class, Engine.class.getClassLoader())) {
          all.put(p.name(), p);
        }
      }
      all.putAll(providers);
      return new Engine(config, all);
    }
  }

  /** The engine's configuration. */
  public EngineConfig config() {
    return config;
  }

  /** Names of the registered placement policies (besides HAMi's binpack/spread families). */
  public List<String> placementPolicies() {
    return List.copyOf(providers.keySet());
  }

  // ---------------------------------------------------------------------------------------------
  // Nodes and quotas

  /**
   * Registers a node, or re-registers it with new capacity, health or cordons. Its usage is the sum of
   * the grants held on it, so grants restored before it registered count, and a device new to it gets
   * the usage of the grants that name it.
   */
  public void upsertNode(NodeDevices node) {
    synchronized (registrationLock) {
      while (true) {
        AtomicReference<NodeState> ref = entry(node.name());
        NodeState old = ref.get();
        if (old == NodeState.RETIRED) {
          forget(node.name(), ref);
          continue;
        }
        NodeState registered = old.registeredAs(node);
        if (ref.compareAndSet(old, registered)) {
          if (!old.registered) {
            // The list holds exactly the registered nodes (a removal rebuilds it), so a node that
            // registers goes at its end: registering n nodes costs O(n) copies, not n rebuilds.
            nodeList = nodeList.with(node.name(), ref);
          }
          countCards(old, registered);
          return;
        }
      }
    }
  }

  /** Removes a node. Grants on it stay held and count again if it comes back. */
  public boolean removeNode(String name) {
    synchronized (registrationLock) {
      AtomicReference<NodeState> ref = nodes.get(name);
      if (ref == null) {
        return false;
      }
      while (true) {
        NodeState old = ref.get();
        if (!old.registered) {
          return false;
        }
        NodeState withdrawn = old.withdrawn();
        if (ref.compareAndSet(old, withdrawn)) {
          rebuildNodeList();
          countCards(old, withdrawn);
          retireIfIdle(name, ref, withdrawn);
          return true;
        }
      }
    }
  }

  /** The node's ledger entry, created unregistered and empty when there is none. */
  private AtomicReference<NodeState> entry(String name) {
    AtomicReference<NodeState> ref = nodes.get(name);
    if (ref != null) {
      return ref;
    }
    ref = nodes.computeIfAbsent(name, n -> new AtomicReference<>(NodeState.unregistered(n, cpu.node(n))));
    membership.incrementAndGet();
    return ref;
  }

  /** Removes a retired entry from the map; a resolution that holds it must look again. */
  private void forget(String name, AtomicReference<NodeState> ref) {
    if (nodes.remove(name, ref)) {
      membership.incrementAndGet();
    }
  }

  /**
   * Updates the registered cards by type for a node that went from {@code before} to {@code after}
   * (under the registration lock), and tells the policies when the counts changed.
   */
  private void countCards(NodeState before, NodeState after) {
    if (before.registered && after.registered && Arrays.equals(before.types, after.types)) {
      return;
    }
    Map<String, Long> old = Map.copyOf(cardsByType);
    if (before.registered) {
      for (String type : before.types) {
        cardsByType.merge(type, -1L, (a, b) -> a + b == 0 ? null : a + b);
      }
    }
    if (after.registered) {
      for (String type : after.types) {
        cardsByType.merge(type, 1L, Long::sum);
      }
    }
    if (!cardsByType.equals(old)) {
      Map<String, Long> now = Map.copyOf(cardsByType);
      registeredCards = now;
      namedPolicies.values().forEach(p -> p.cardTypesRegistered(now));
    }
  }

  /** The registered cards by type (every registered card counts, healthy or not, cordoned or not). */
  public Map<String, Long> cardsByType() {
    return registeredCards;
  }

  /**
   * Drops the entry of a node that is neither registered nor holds a grant. It is first marked
   * retired, so a thread that fetched the entry before it left the map cannot add to it unseen.
   */
  private void retireIfIdle(String name, AtomicReference<NodeState> ref, NodeState state) {
    if (state.idle() && ref.compareAndSet(state, NodeState.RETIRED)) {
      forget(name, ref);
    }
  }

  private void rebuildNodeList() {
    List<String> names = new ArrayList<>();
    List<AtomicReference<NodeState>> refs = new ArrayList<>();
    // A set, not names.contains: registering n nodes must not cost O(n^3).
    Set<String> listed = new HashSet<>();
    for (String name : nodeList.names) {
      AtomicReference<NodeState> ref = nodes.get(name);
      if (ref != null && ref.get().registered) {
        names.add(name);
        refs.add(ref);
        listed.add(name);
      }
    }
    for (Map.Entry<String, AtomicReference<NodeState>> e : nodes.entrySet()) {
      if (e.getValue().get().registered && listed.add(e.getKey())) {
        names.add(e.getKey());
        refs.add(e.getValue());
      }
    }
    nodeList = new NodeList(names, refs);
  }

  /** Names of the registered nodes, in registration order. */
  public List<String> nodeNames() {
    return List.of(nodeList.names);
  }

  /** Whether the node is registered. */
  public boolean hasNode(String name) {
    return registered(name) != null;
  }

  /** The node's current snapshot, or {@code null} when it is not registered. */
  private @Nullable NodeState registered(String name) {
    AtomicReference<NodeState> ref = nodes.get(name);
    NodeState state = ref == null ? null : ref.get();
    return state == null || !state.registered ? null : state;
  }

  // ---------------------------------------------------------------------------------------------
  // CPU, for the policies that model it

  /**
   * Sets how much CPU a node can give pods, in millicores (Kubernetes' allocatable CPU), so that
   * policies which model CPU (such as {@code fgd} and {@code vgpu}) see the node's free CPU through
   * {@link io.vgpu.api.spi.NodeView#freeCpuMilli()}: its allocatable CPU minus the CPU of every pod
   * counted on it, never below 0. Pods are counted by {@link #setPodCpu}, and a pod this engine
   * reserved a grant for with a known {@link PodRequest#cpuMilli()} is counted on its node from the
   * reservation until it is reported or its grant is released. Without a call the node's CPU is not
   * modelled and its free CPU reads -1; the fit rules never look at CPU.
   *
   * @param allocatableMilli the node's allocatable CPU in millicores, or -1 to stop modelling it
   * @throws IllegalArgumentException when the value is below -1
   */
  public void setNodeCpu(String node, long allocatableMilli) {
    if (allocatableMilli < -1) {
      throw new IllegalArgumentException("node " + node + ": allocatable cpu " + allocatableMilli + " millicores is negative");
    }
    cpu.allocatable(node, allocatableMilli);
  }

  /**
   * Counts a pod's CPU request on the node it is bound to, replacing whatever was counted for it
   * before (its reservation included). Embedders report every pod that runs on a node this way,
   * with devices or without, and {@link #removePodCpu} once it finished or is gone.
   *
   * @param cpuMilli the pod's CPU request in millicores
   * @throws IllegalArgumentException when the request is negative
   */
  public void setPodCpu(PodRef pod, String node, long cpuMilli) {
    if (cpuMilli < 0) {
      throw new IllegalArgumentException("pod " + pod + ": cpu " + cpuMilli + " millicores is negative");
    }
    cpu.bound(pod, node, cpuMilli);
  }

  /** Stops counting a pod's CPU (it finished or was deleted); nothing happens when none is counted. */
  public void removePodCpu(PodRef pod) {
    cpu.forget(pod);
  }

  /** A node's free CPU in millicores as policies see it, or -1 when its CPU is not modelled. */
  public long freeCpuMilli(String node) {
    return cpu.node(node).free();
  }

  /** Sets a namespace's quota; {@link QuotaLimits#NONE} lifts it. */
  public void setQuota(String namespace, QuotaLimits limits) {
    quotas.setLimits(namespace, limits);
  }

  // ---------------------------------------------------------------------------------------------
  // Queues

  /**
   * Adds a queue or replaces it (KAI Scheduler's {@code scheduling.run.ai/v2} Queue). Pods are charged to
   * leaf queues ({@link PodRequest#queue()}); a reservation is refused when it would take the pod's queue,
   * or any queue above it, past its GPU or CPU limit. Grants already counted stay counted whatever the
   * tree becomes.
   */
  public void upsertQueue(io.vgpu.core.queue.QueueSpec queue) {
    queues.upsert(queue);
  }

  /**
   * Removes a queue. Pods still holding grants in it keep them counted until they are released; new pods
   * naming it wait ({@link Waiting.Reason#QUEUE_MISSING}). Returns whether the queue existed.
   */
  public boolean removeQueue(String name) {
    return queues.remove(name);
  }

  /** The queues as last set, in creation order. */
  public List<io.vgpu.core.queue.QueueSpec> queues() {
    return queues.specs();
  }

  /**
   * What each queue's pods hold, in creation order, including a removed queue whose pods still hold
   * grants.
   */
  public List<io.vgpu.core.queue.QueueAllocation> queueAllocations() {
    return queues.allocations();
  }

  /** A namespace's quota and usage. */
  public QuotaUsage quota(String namespace) {
    return quotas.usage(namespace);
  }

  /** Every namespace's quota and usage, by namespace name. */
  public List<QuotaUsage> quotas() {
    return quotas.all();
  }

  // ---------------------------------------------------------------------------------------------
  // Filter

  /**
   * Prepares a request for evaluation: applies defaults and resolves its policy.
   *
   * @throws IllegalArgumentException when the request cannot be resolved (the message names the field)
   */
  public CompiledRequest compile(PodRequest request) {
    String nodePolicy = nonEmpty(request.overrides().nodePolicy(), config.nodePolicy());
    String devicePolicy = nonEmpty(request.overrides().devicePolicy(), config.devicePolicy());
    boolean numaBind = request.constraints().numaBind();
    PlacementPolicy policy = namedPolicy(devicePolicy.trim());
    if (policy == null) {
      policy = hamiPolicy(HamiPolicy.settings(nodePolicy, devicePolicy, request.overrides().weights(), numaBind));
    }
    boolean mutex = HamiPolicy.mentions(devicePolicy, "mutex");
    return new CompiledRequest(request, resolver, policy, mutex);
  }

  private HamiPolicy hamiPolicy(HamiPolicy.Settings settings) {
    HamiPolicy cached = hamiPolicies.get(settings);
    if (cached != null) {
      return cached;
    }
    if (hamiPolicies.size() >= MAX_CACHED_HAMI_POLICIES) {
      return new HamiPolicy(settings);
    }
    return hamiPolicies.computeIfAbsent(settings, HamiPolicy::new);
  }

  /** How many HAMi policies are cached (for tests of the bound). */
  int cachedHamiPolicies() {
    return hamiPolicies.size();
  }

  private @Nullable PlacementPolicy namedPolicy(String name) {
    PlacementPolicyProvider provider = providers.get(name);
    if (provider == null) {
      return null;
    }
    return namedPolicies.computeIfAbsent(name, n -> provider.create());
  }

  private static String nonEmpty(String value, String fallback) {
    return value.isBlank() ? fallback : value;
  }

  /**
   * Finds the best node for a pod among the candidates.
   *
   * @param request the compiled request
   * @param candidates node names in preference order for ties, or {@code null} for every registered
   *     node in registration order
   * @param detailed whether to also report every fitting node's score and every other node's
   *     rejection (slower; the scan itself allocates nothing per node when this is false)
   */
  public FilterResult filter(CompiledRequest request, @Nullable List<String> candidates, boolean detailed) {
    return scan(request, candidates == null ? null : resolve(candidates), detailed);
  }

  /**
   * Resolves candidate names for {@link #filterResolved}: {@code
   * previous} itself when it lists the same names in the same order and no node has joined or left
   * this engine since it was resolved, a fresh resolution otherwise.
   *
   * @param names node names in preference order for ties
   * @param previous the last resolution, or {@code null}
   */
  public CandidateNodes candidates(List<String> names, @Nullable CandidateNodes previous) {
    if (previous != null && previous.engine == this && previous.membership == membership.get() && previous.names.equals(names)) {
      return previous;
    }
    return resolve(List.copyOf(names));
  }

  @SuppressWarnings("unchecked")
  private CandidateNodes resolve(List<String> names) {
    // Read before the lookups: an entry that joins during them makes the result stale, never wrong.
    long version = membership.get();
    AtomicReference<NodeState>[] refs = new AtomicReference[names.size()];
    for (int i = 0; i < refs.length; i++) {
      refs[i] = nodes.get(names.get(i));
    }
    return new CandidateNodes(this, version, names, refs);
  }

  /**
   * As {@link #filter(CompiledRequest, List, boolean)}, with the candidates resolved once (see {@link
   * #candidates}); a resolution that has gone stale, or was made by another engine, is resolved again
   * for this call.
   */
  public FilterResult filterResolved(CompiledRequest request, CandidateNodes candidates, boolean detailed) {
    boolean current = candidates.engine == this && candidates.membership == membership.get();
    return scan(request, current ? candidates : resolve(candidates.names), detailed);
  }

  /**
   * As {@link #filterResolved(CompiledRequest, CandidateNodes, boolean)} with reasons, listing only the
   * first {@code fittingListed} fitting nodes (in candidate order) and counting the rest ({@link
   * FilterResult#fittingCount}): a scheduler that reports a handful of them makes no object per fitting
   * node of thousands.
   */
  public FilterResult filterResolved(CompiledRequest request, CandidateNodes candidates, int fittingListed) {
    return filterResolved(request, candidates, fittingListed, true);
  }

  /**
   * As {@link #filterResolved(CompiledRequest, CandidateNodes, int)}, with each rejected node's reason
   * only where {@code reasons} asks for it. Without, {@link FilterResult#rejections} is empty and the
   * rejected nodes are only counted (the candidates less {@link FilterResult#fittingCount}): a node that
   * the fast screen refuses is not fitted again card by card to say why. That is what a scheduler whose
   * pod is placed needs; in a nearly full cluster most candidates are rejected, and their reasons were
   * most of the scan.
   */
  public FilterResult filterResolved(CompiledRequest request, CandidateNodes candidates, int fittingListed, boolean reasons) {
    if (fittingListed < 0) {
      throw new IllegalArgumentException("fittingListed must not be negative: " + fittingListed);
    }
    boolean current = candidates.engine == this && candidates.membership == membership.get();
    return scan(request, current ? candidates : resolve(candidates.names), true, reasons, fittingListed);
  }

  /** The filter's scan over the candidates, or over every registered node when they are {@code null}. */
  private FilterResult scan(CompiledRequest request, @Nullable CandidateNodes candidates, boolean detailed) {
    return scan(request, candidates, detailed, detailed, Integer.MAX_VALUE);
  }

  /**
   * @param listFitting whether fitting nodes are listed (up to {@code fittingListed}) and counted
   * @param reasons whether each rejected node is listed with its reason
   */
  private FilterResult scan(CompiledRequest request, @Nullable CandidateNodes candidates, boolean listFitting, boolean reasons, int fittingListed) {
    String queue = request.request.queue();
    if (queue != null) {
      Waiting missing = queues.admissible(queue);
      if (missing != null) {
        return FilterResult.waiting(missing);
      }
    }
    PodFitter fitter = fitters.get();
    QuotaLedger.QuotaCheck quota = quotas.check(request.request.pod().namespace());
    // An order-independent request is screened by the fast path: a node where no card order could fit
    // it costs no card ranking. A policy that scores usage only needs nothing more from the scan.
    CardDemand fastDemand = request.fastContainer >= 0 && quota == null ? request.appDemands[request.fastContainer] : null;
    boolean screen = fastDemand != null;
    List<FilterResult.NodeScore> fitting = listFitting ? new ArrayList<>() : List.of();
    List<NodeRejection> rejections = reasons ? new ArrayList<>() : List.of();
    NodeState best = null;
    double bestScore = Double.NEGATIVE_INFINITY;
    int fittingCount = 0;

    boolean fast = screen && request.policy.scoresNodeUsageOnly();
    NodeList list = nodeList;
    AtomicReference<NodeState>[] refs = candidates == null ? list.refs : candidates.refs;
    int count = refs.length;
    int prefetched = 0;
    for (int i = 0; i < count; i++) {
      if ((i & (PREFETCH_BLOCK - 1)) == 0) {
        prefetched += prefetch(refs, i, Math.min(count, i + PREFETCH_BLOCK));
      }
      AtomicReference<NodeState> ref = refs[i];
      // A plain read: a snapshot is immutable (final fields only), so any reference read shows it whole,
      // and a volatile read here would fence every later load of the loop; reserve re-checks with a CAS.
      NodeState state = ref == null ? NodeState.RETIRED : ref.getPlain();
      // An unregistered snapshot has no device, so the fast path refuses it without looking.
      boolean screenedOut = screen && !fastFits(state, request, fastDemand);
      if (screenedOut || (!fast && (!state.registered || !fitter.fit(state, request, quota)))) {
        if (reasons) {
          if (!state.registered) {
            rejections.add(NodeRejection.unregistered(candidates == null ? list.names[i] : candidates.names.get(i)));
          } else {
            if (screenedOut) {
              fitter.fit(state, request, null);
            }
            rejections.add(fitter.rejection());
          }
        }
        continue;
      }
      double score = request.policy.scoreNode(state, fast ? NO_PLACEMENT : fitter);
      fittingCount++;
      if (listFitting && fitting.size() < fittingListed) {
        fitting.add(new FilterResult.NodeScore(state.name, score));
      }
      if (score > bestScore) {
        best = state;
        bestScore = score;
      }
    }
    fitter.prefetchSink = prefetched;
    if (best == null) {
      return new FilterResult(Optional.empty(), fitting, rejections, Optional.empty(), fittingCount);
    }
    if (!fitter.fit(best, request, quota)) {
      throw new IllegalStateException("node " + best.name + " fitted during the scan but not on re-check");
    }
    Placement placement = new Placement(best.name, bestScore, fitter.grant(request, config.schema().vendor()), request);
    if (queue != null) {
      PodUsage usage = PodUsage.of(placement.grant());
      Waiting over = queues.wouldExceed(queue, usage.gpuHundredths(best), queueCpu(request));
      if (over != null) {
        return FilterResult.waiting(over);
      }
    }
    return new FilterResult(Optional.of(placement), fitting, rejections, Optional.empty(), listFitting ? fittingCount : 0);
  }

  /** Nodes per prefetch block: their snapshots' lines (about 12 KiB for 64) stay in the L1 cache. */
  private static final int PREFETCH_BLOCK = 64;

  /**
   * Reads one field from each snapshot in {@code refs[from, to)} and returns their sum, so that the
   * scan then finds those snapshots in cache. Where the collector scatters snapshots across the heap
   * (G1 does; Serial and Parallel copy them side by side), each one is a cache miss behind another
   * (array, reference, snapshot), and the scan's branches keep the CPU from overlapping more than a few
   * of them; this loop has no branch to speak of, so dozens are in flight at once. FitPathBenchmark at
   * 5,000 nodes on G1: 72 µs without it, 37 µs with it.
   */
  private static int prefetch(AtomicReference<NodeState>[] refs, int from, int to) {
    int sum = 0;
    for (int i = from; i < to; i++) {
      AtomicReference<NodeState> ref = refs[i];
      if (ref != null) {
        NodeState state = ref.getPlain();
        // Two fields, because a snapshot's scan fields (bytes 8 to 56) usually straddle two lines.
        sum += state.deviceCount + state.roomiestUsedCores;
      }
    }
    return sum;
  }

  /**
   * The scan's fast path for one container with devices and no constraint that depends on order: the
   * pod fits iff enough cards pass the fit rule, whichever order they are tried in.
   */
  private static boolean fastFits(NodeState node, CompiledRequest req, CardDemand demand) {
    int need = demand.count();
    int n = node.deviceCount;
    if (need > n) {
      return false;
    }
    CardConstraints c = req.constraints;
    int cores = demand.cores();
    if (need == 1 && node.roomiest >= 0) {
      // The roomiest card, kept in the snapshot itself, decides most nodes without the device array.
      int totalMem = node.roomiestTotalMem;
      if (FitRule.fits(
          c, node, node.roomiest, node.roomiestFlags, node.roomiestType, node.roomiestSplit, node.roomiestSharers,
          totalMem, node.roomiestUsedMem, demand.memoryOn(totalMem), node.roomiestTotalCores, node.roomiestUsedCores, cores)) {
        return true;
      }
    }
    int[] data = node.data;
    int found = 0;
    for (int d = 0, base = 0; d < n; d++, base += NodeState.STRIDE) {
      int totalMem = data[base + NodeState.TOTAL_MEM];
      if (FitRule.fits(
              c, node, d, data[base + NodeState.FLAGS], data[base + NodeState.TYPE], data[base + NodeState.SPLIT],
              data[base + NodeState.SHARERS], totalMem, data[base + NodeState.USED_MEM], demand.memoryOn(totalMem),
              data[base + NodeState.TOTAL_CORES], data[base + NodeState.USED_CORES], cores)
          && ++found == need) {
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // Reserve and release

  /**
   * Counts a placement the filter made, if it still fits: each card is checked against its node's
   * current snapshot with the rule the filter applied (the pod's device constraints and device policy
   * included), and the namespace's quota is checked too, atomically. It refuses exactly what a fresh
   * filter of the pod would refuse on those cards. Linearizable per node and per namespace; there is
   * no global lock.
   */
  public ReserveResult reserve(Placement placement) {
    return apply(placement.grant(), true, placement.request);
  }

  /**
   * Counts a grant, if it fits: as {@link #reserve(Placement)}, for a grant that names no request, so
   * checked against every card rule but no pod constraint (type and UUID lists, NUMA binding, the
   * {@code mutex} policy).
   */
  public ReserveResult reserve(PodGrant grant) {
    return apply(grant, true, null);
  }

  /**
   * As {@link #reserve(PodGrant)}, charging the grant to a queue and refusing it when that would take
   * the queue, or one above it, past its limit (a reservation a scheduler takes over, or makes again for
   * a bind). Its GPU charge is taken from the cards' memory, as {@link #restore(PodGrant, String)} takes it.
   *
   * @param queue the pod's leaf queue, or {@code null} for none
   */
  public ReserveResult reserve(PodGrant grant, @Nullable String queue) {
    return apply(grant, true, null, queue);
  }

  /**
   * Counts a grant unconditionally, as when rebuilding the ledger from what the cluster already runs.
   * A grant on a node the engine does not know yet is held and counted once the node registers.
   */
  public ReserveResult restore(PodGrant grant) {
    return apply(grant, false, null, null);
  }

  /**
   * As {@link #restore(PodGrant)}, charging the grant to a queue whatever its limit says (the pod runs
   * already). Its GPU charge is taken from the cards' memory; a card the engine does not know yet counts
   * whole.
   *
   * @param queue the pod's leaf queue, or {@code null} for none
   */
  public ReserveResult restore(PodGrant grant, @Nullable String queue) {
    return apply(grant, false, null, queue);
  }

  private static long queueCpu(CompiledRequest request) {
    return Math.max(0, request.request.cpuMilli());
  }

  private ReserveResult apply(PodGrant grant, boolean enforce, @Nullable CompiledRequest request) {
    return apply(grant, enforce, request, request == null ? null : request.request.queue());
  }

  private ReserveResult apply(PodGrant grant, boolean enforce, @Nullable CompiledRequest request, @Nullable String queue) {
    ReserveResult[] result = new ReserveResult[1];
    pods.compute(
        grant.pod(),
        (pod, held) -> {
          if (held != null) {
            result[0] = new ReserveResult(ReserveResult.Status.ALREADY_RESERVED, pod + " already holds a grant on " + held.grant.node());
            return held;
          }
          PodUsage usage = PodUsage.of(grant);
          if (queue != null) {
            AtomicReference<NodeState> node = nodes.get(grant.node());
            usage = usage.chargedTo(queue, usage.gpuHundredths(node == null ? null : node.get()), request == null ? 0 : queueCpu(request));
          }
          result[0] = charge(usage, enforce, request == null ? CardConstraints.NONE : request.constraints);
          if (!result[0].reserved()) {
            return null;
          }
          // Inside the pod's own update, so that a release of the pod cannot slip in between.
          if (request != null && request.request.cpuMilli() >= 0) {
            cpu.assume(pod, grant.node(), request.request.cpuMilli());
          }
          return usage;
        });
    if (result[0].reserved()) {
      workload.counted(grant, request);
    }
    return result[0];
  }

  private ReserveResult charge(PodUsage usage, boolean enforce, CardConstraints constraints) {
    String namespace = usage.grant.pod().namespace();
    if (enforce && registered(usage.grant.node()) == null) {
      return new ReserveResult(ReserveResult.Status.UNKNOWN, "node " + usage.grant.node() + " is not registered");
    }
    if (!quotas.tryAdd(namespace, usage.totalMemory, usage.totalCores, enforce)) {
      return new ReserveResult(
          ReserveResult.Status.CONFLICT,
          "namespace " + namespace + " quota exceeded by " + usage.totalMemory + " MiB / " + usage.totalCores + " cores of " + usage.grant.pod());
    }
    if (usage.queue != null) {
      Waiting refused = queues.tryCharge(usage.queue, usage.queueGpu, usage.queueCpu, enforce);
      if (refused != null) {
        quotas.subtract(namespace, usage.totalMemory, usage.totalCores);
        return new ReserveResult(ReserveResult.Status.CONFLICT, refused.message());
      }
    }
    ReserveResult result = enforce ? chargeIfFits(usage, constraints) : chargeAnyway(usage);
    if (!result.reserved()) {
      quotas.subtract(namespace, usage.totalMemory, usage.totalCores);
      if (usage.queue != null) {
        queues.uncharge(usage.queue, usage.queueGpu, usage.queueCpu);
      }
    }
    return result;
  }

  /** Adds the grant to its node's snapshot if it fits that very snapshot; else says why not. */
  private ReserveResult chargeIfFits(PodUsage usage, CardConstraints constraints) {
    String node = usage.grant.node();
    AtomicReference<NodeState> ref = nodes.get(node);
    PodFitter fitter = fitters.get();
    while (true) {
      NodeState state = ref == null ? NodeState.RETIRED : ref.get();
      if (state == NodeState.RETIRED && ref != null) {
        // The entry is leaving the map; the node may have registered again under a new one.
        forget(node, ref);
        ref = nodes.get(node);
        continue;
      }
      if (!state.registered) {
        return new ReserveResult(ReserveResult.Status.UNKNOWN, "node " + node + " is not registered");
      }
      for (String uuid : usage.uuids) {
        if (state.positionOf(uuid) < 0) {
          return new ReserveResult(ReserveResult.Status.UNKNOWN, "device " + uuid + " is not registered on node " + node);
        }
      }
      String refusal = fitter.refusal(state, constraints, usage.grant);
      if (refusal != null) {
        return new ReserveResult(ReserveResult.Status.CONFLICT, refusal);
      }
      if (ref.compareAndSet(state, state.plus(usage))) {
        return ReserveResult.RESERVED;
      }
    }
  }

  /** Adds the grant to its node's snapshot, registered or not. */
  private ReserveResult chargeAnyway(PodUsage usage) {
    String node = usage.grant.node();
    while (true) {
      AtomicReference<NodeState> ref = entry(node);
      NodeState state = ref.get();
      if (state == NodeState.RETIRED) {
        forget(node, ref);
        continue;
      }
      if (ref.compareAndSet(state, state.plus(usage))) {
        return ReserveResult.RESERVED;
      }
    }
  }

  /** Returns a pod's grant to the ledger. Returns whether the pod held one. */
  public boolean release(PodRef pod) {
    boolean[] released = new boolean[1];
    pods.computeIfPresent(
        pod,
        (p, held) -> {
          uncharge(held);
          cpu.forgetAssumed(p);
          released[0] = true;
          return null;
        });
    return released[0];
  }

  private void uncharge(PodUsage usage) {
    quotas.subtract(usage.grant.pod().namespace(), usage.totalMemory, usage.totalCores);
    if (usage.queue != null) {
      queues.uncharge(usage.queue, usage.queueGpu, usage.queueCpu);
    }
    String node = usage.grant.node();
    // A node that holds a grant is never retired, so the grant's entry is still in the map.
    AtomicReference<NodeState> ref = nodes.get(node);
    if (ref == null) {
      throw new IllegalStateException(usage.grant.pod() + " holds a grant on " + node + ", which has no ledger entry");
    }
    while (true) {
      NodeState state = ref.get();
      NodeState next = state.minus(usage);
      if (ref.compareAndSet(state, next)) {
        retireIfIdle(node, ref, next);
        return;
      }
    }
  }

  /** The queue a pod's grant is charged to, if it holds one charged to a queue. */
  public Optional<String> chargedQueue(PodRef pod) {
    PodUsage held = pods.get(pod);
    return held == null ? Optional.empty() : Optional.ofNullable(held.queue);
  }

  /** The GPU a pod's grant is charged to its queue, in hundredths of a card (0 when it holds none). */
  public long chargedGpuHundredths(PodRef pod) {
    PodUsage held = pods.get(pod);
    return held == null ? 0 : held.queueGpu;
  }

  // ---------------------------------------------------------------------------------------------
  // Gangs

  /**
   * Places a gang all or nothing: each member is filtered and reserved in turn (so later members see the
   * cards earlier ones took, and every queue limit is checked as for one pod), and unless at least {@code
   * needed} of them got cards, every grant made here is released again before this returns. Members that
   * fit nowhere are skipped, as KAI Scheduler skips tasks of a job that still reaches its minimum. Gangs
   * are placed one at a time; a single pod reserved concurrently may be refused while a gang that then
   * fails briefly holds cards, never the reverse, and no card is ever over-committed.
   *
   * @param members the members to place, in the order to try them; none may hold a grant yet
   * @param needed how many of them must be placed: the gang's minimum less the members already holding
   *     grants (0 places what fits)
   * @param candidates node names, or {@code null} for every registered node
   */
  public GangResult reserveGang(List<CompiledRequest> members, int needed, @Nullable List<String> candidates) {
    if (needed < 0) {
      throw new IllegalArgumentException("needed " + needed + " is negative");
    }
    synchronized (gangLock) {
      List<Placement> placed = new ArrayList<>();
      Map<PodRef, String> refused = new LinkedHashMap<>();
      for (CompiledRequest member : members) {
        FilterResult result = filter(member, candidates, false);
        if (result.placement().isEmpty()) {
          refused.put(member.request.pod(), result.waiting().map(Waiting::message).orElse("fits on no node"));
          continue;
        }
        ReserveResult reserved = reserve(result.placement().get());
        if (reserved.reserved()) {
          placed.add(result.placement().get());
        } else {
          refused.put(member.request.pod(), reserved.message());
        }
      }
      if (placed.size() >= needed) {
        return new GangResult(placed, refused, null);
      }
      for (Placement p : placed) {
        release(p.grant().pod());
      }
      String message = placed.size() + " of " + members.size() + " members fit, " + needed + " needed";
      if (!refused.isEmpty()) {
        Map.Entry<PodRef, String> first = refused.entrySet().iterator().next();
        message += "; " + first.getKey() + ": " + first.getValue();
      }
      return new GangResult(List.of(), refused, new Waiting(Waiting.Reason.GANG_INCOMPLETE, message));
    }
  }

  /** The grant a pod holds, if any. */
  public Optional<PodGrant> grant(PodRef pod) {
    PodUsage held = pods.get(pod);
    return held == null ? Optional.empty() : Optional.of(held.grant);
  }

  /** Every grant the engine holds, ordered by pod. */
  public List<PodGrant> grants() {
    List<PodGrant> all = new ArrayList<>();
    pods.values().forEach(h -> all.add(h.grant));
    all.sort((a, b) -> a.pod().compareTo(b.pod()));
    return all;
  }

  /** Pods holding a grant on the device with this UUID on this node, ordered by pod. */
  public List<PodRef> holders(String node, String uuid) {
    AtomicReference<NodeState> ref = nodes.get(node);
    return ref == null ? List.of() : ref.get().holders(uuid);
  }

  // ---------------------------------------------------------------------------------------------
  // Views

  /** Every node's devices and usage, in registration order. */
  public List<NodeUsage> usage() {
    List<NodeUsage> out = new ArrayList<>();
    NodeList list = nodeList;
    for (int i = 0; i < list.names.length; i++) {
      NodeState state = list.refs[i].get();
      if (state.registered) {
        out.add(usageOf(state));
      }
    }
    return out;
  }

  /** One node's devices and usage. */
  public Optional<NodeUsage> usage(String node) {
    NodeState state = registered(node);
    return state == null ? Optional.empty() : Optional.of(usageOf(state));
  }

  private static NodeUsage usageOf(NodeState s) {
    List<DeviceUsage> devices = new ArrayList<>(s.deviceCount);
    for (int d = 0; d < s.deviceCount; d++) {
      SchedulableDevice dev =
          new SchedulableDevice(
              s.uuids[d], s.index(d), s.types[d], s.totalMemoryMiB(d), s.totalCores(d), s.splitCount(d), s.numa(d), s.healthy(d), s.modes[d]);
      devices.add(new DeviceUsage(dev, s.cordoned(d), s.usedMemoryMiB(d), s.usedCores(d), s.sharers(d)));
    }
    return new NodeUsage(s.name, devices);
  }

  // ---------------------------------------------------------------------------------------------
  // Explain

  /**
   * Explains, per node and per card, why a pod does not fit, how much each card lacks, which pods hold
   * it, and the cheapest change that would make the pod fit.
   *
   * @param candidates node names, or {@code null} for every registered node
   */
  public Explanation explain(CompiledRequest request, @Nullable List<String> candidates) {
    List<String> names = candidates == null ? nodeNames() : candidates;
    List<NodeState> states = new ArrayList<>(names.size());
    for (String name : names) {
      states.add(registered(name));
    }
    return new Explainer(this, quotas.check(request.request.pod().namespace()), fitters.get())
        .explain(request, names, states);
  }
}
