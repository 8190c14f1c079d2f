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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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

  private final EngineConfig config;
  private final RequestResolver resolver;
  private final Map<String, PlacementPolicyProvider> providers;
  private final Map<String, PlacementPolicy> namedPolicies = new ConcurrentHashMap<>();
  private final Map<String, HamiPolicy> hamiPolicies = new ConcurrentHashMap<>();
  /**
   * Every registered node, and every unregistered one on which grants are held (they count once it
   * registers). An entry whose snapshot is {@link NodeState#RETIRED} is on its way out of the map.
   */
  private final Map<String, AtomicReference<NodeState>> nodes = new ConcurrentHashMap<>();
  private final Object registrationLock = new Object();
  private volatile NodeList nodeList = new NodeList(List.of(), List.of());
  /** The grant each pod holds; the count itself lives in its node's snapshot. */
  private final Map<PodRef, PodUsage> pods = new ConcurrentHashMap<>();
  private final QuotaLedger quotas;
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
  }

  private Engine(EngineConfig config, Map<String, PlacementPolicyProvider> providers) {
    this.config = config;
    this.resolver = new RequestResolver(config.schema());
    this.providers = providers;
    this.quotas = new QuotaLedger(config.schema().effectiveMemoryFactor());
    // Every named policy exists from the start, so each learns from every grant counted.
    providers.forEach((name, provider) -> namedPolicies.put(name, provider.create()));
    this.workload = new WorkloadFeed(List.copyOf(namedPolicies.values()));
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
          nodes.remove(node.name(), ref);
          continue;
        }
        if (ref.compareAndSet(old, old.registeredAs(node))) {
          if (!old.registered) {
            rebuildNodeList();
          }
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
          retireIfIdle(name, ref, withdrawn);
          return true;
        }
      }
    }
  }

  /** The node's ledger entry, created unregistered and empty when there is none. */
  private AtomicReference<NodeState> entry(String name) {
    return nodes.computeIfAbsent(name, n -> new AtomicReference<>(NodeState.unregistered(n)));
  }

  /**
   * Drops the entry of a node that is neither registered nor holds a grant. It is first marked
   * retired, so a thread that fetched the entry before it left the map cannot add to it unseen.
   */
  private void retireIfIdle(String name, AtomicReference<NodeState> ref, NodeState state) {
    if (state.idle() && ref.compareAndSet(state, NodeState.RETIRED)) {
      nodes.remove(name, ref);
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

  /** Sets a namespace's quota; {@link QuotaLimits#NONE} lifts it. */
  public void setQuota(String namespace, QuotaLimits limits) {
    quotas.setLimits(namespace, limits);
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
      String key = nodePolicy + '|' + devicePolicy + '|' + request.overrides().weights() + '|' + numaBind;
      policy =
          hamiPolicies.computeIfAbsent(
              key, k -> new HamiPolicy(nodePolicy, devicePolicy, request.overrides().weights(), numaBind));
    }
    boolean mutex = HamiPolicy.mentions(devicePolicy, "mutex");
    return new CompiledRequest(request, resolver, policy, mutex);
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
    PodFitter fitter = fitters.get();
    QuotaLedger.QuotaCheck quota = quotas.check(request.request.pod().namespace());
    CardDemand fastDemand =
        request.fastContainer >= 0 && quota == null && request.policy.scoresNodeUsageOnly()
            ? request.appDemands[request.fastContainer]
            : null;
    List<FilterResult.NodeScore> fitting = detailed ? new ArrayList<>() : List.of();
    List<NodeRejection> rejections = detailed ? new ArrayList<>() : List.of();
    NodeState best = null;
    double bestScore = Double.NEGATIVE_INFINITY;

    boolean fast = fastDemand != null;
    NodeList list = nodeList;
    int count = candidates == null ? list.names.length : candidates.size();
    for (int i = 0; i < count; i++) {
      NodeState state;
      if (candidates == null) {
        state = list.refs[i].get();
      } else {
        AtomicReference<NodeState> ref = nodes.get(candidates.get(i));
        state = ref == null ? NodeState.RETIRED : ref.get();
      }
      // An unregistered snapshot has no device, so the fast path refuses it without looking.
      if (fast ? !fastFits(state, request, fastDemand) : !state.registered || !fitter.fit(state, request, quota)) {
        if (detailed) {
          if (!state.registered) {
            rejections.add(NodeRejection.unregistered(candidates == null ? list.names[i] : candidates.get(i)));
          } else {
            if (fast) {
              fitter.fit(state, request, null);
            }
            rejections.add(fitter.rejection());
          }
        }
        continue;
      }
      double score = request.policy.scoreNode(state, fast ? NO_PLACEMENT : fitter);
      if (detailed) {
        fitting.add(new FilterResult.NodeScore(state.name, score));
      }
      if (score > bestScore) {
        best = state;
        bestScore = score;
      }
    }
    if (best == null) {
      return new FilterResult(Optional.empty(), fitting, rejections);
    }
    if (!fitter.fit(best, request, quota)) {
      throw new IllegalStateException("node " + best.name + " fitted during the scan but not on re-check");
    }
    Placement placement = new Placement(best.name, bestScore, fitter.grant(request, config.schema().vendor()), request);
    return new FilterResult(Optional.of(placement), fitting, rejections);
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
      int refused =
          FitRule.refusals(
              c, node, node.roomiest, node.roomiestFlags, node.roomiestType, node.roomiestSplit, node.roomiestSharers,
              totalMem, node.roomiestUsedMem, demand.memoryOn(totalMem), node.roomiestTotalCores, node.roomiestUsedCores, cores);
      if (refused == 0) {
        return true;
      }
    }
    int[] data = node.data;
    int found = 0;
    for (int d = 0, base = 0; d < n; d++, base += NodeState.STRIDE) {
      int totalMem = data[base + NodeState.TOTAL_MEM];
      int refused =
          FitRule.refusals(
              c, node, d, data[base + NodeState.FLAGS], data[base + NodeState.TYPE], data[base + NodeState.SPLIT],
              data[base + NodeState.SHARERS], totalMem, data[base + NodeState.USED_MEM], demand.memoryOn(totalMem),
              data[base + NodeState.TOTAL_CORES], data[base + NodeState.USED_CORES], cores);
      if (refused == 0 && ++found == need) {
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
   * Counts a grant unconditionally, as when rebuilding the ledger from what the cluster already runs.
   * A grant on a node the engine does not know yet is held and counted once the node registers.
   */
  public ReserveResult restore(PodGrant grant) {
    return apply(grant, false, null);
  }

  private ReserveResult apply(PodGrant grant, boolean enforce, @Nullable CompiledRequest request) {
    ReserveResult[] result = new ReserveResult[1];
    pods.compute(
        grant.pod(),
        (pod, held) -> {
          if (held != null) {
            result[0] = new ReserveResult(ReserveResult.Status.ALREADY_RESERVED, pod + " already holds a grant on " + held.grant.node());
            return held;
          }
          PodUsage usage = PodUsage.of(grant);
          result[0] = charge(usage, enforce, request == null ? CardConstraints.NONE : request.constraints);
          return result[0].reserved() ? usage : null;
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
    ReserveResult result = enforce ? chargeIfFits(usage, constraints) : chargeAnyway(usage);
    if (!result.reserved()) {
      quotas.subtract(namespace, usage.totalMemory, usage.totalCores);
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
        nodes.remove(node, ref);
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
        nodes.remove(node, ref);
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
          released[0] = true;
          return null;
        });
    return released[0];
  }

  private void uncharge(PodUsage usage) {
    quotas.subtract(usage.grant.pod().namespace(), usage.totalMemory, usage.totalCores);
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
