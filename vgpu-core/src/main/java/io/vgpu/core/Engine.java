package io.vgpu.core;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PlacementView;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
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
 * <p>The fit rules, reason words and scores are HAMi's. Every node is an immutable snapshot swapped
 * with compare-and-set: filters read without locking, and concurrent reservations can never
 * over-commit a card, because each one re-checks capacity against the snapshot it replaces. The engine
 * does no I/O and starts no thread; it is safe for concurrent use.
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
  private final Map<String, AtomicReference<NodeState>> nodes = new ConcurrentHashMap<>();
  private final Object registrationLock = new Object();
  private volatile NodeList nodeList = new NodeList(List.of(), List.of());
  private final Map<PodRef, Held> pods = new ConcurrentHashMap<>();
  private final QuotaLedger quotas;
  private final ThreadLocal<PodFitter> fitters = ThreadLocal.withInitial(PodFitter::new);

  private record Held(PodGrant grant, PodUsage usage) {}

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
   * Registers a node, or re-registers it with new capacity. Usage of devices that stay is kept; the
   * usage of a device new to the ledger is rebuilt from the grants that name it.
   */
  public void upsertNode(NodeDevices node) {
    synchronized (registrationLock) {
      AtomicReference<NodeState> ref = nodes.get(node.name());
      if (ref == null) {
        ref = new AtomicReference<>(NodeState.of(node, usageFromGrants(node.name())));
        nodes.put(node.name(), ref);
        rebuildNodeList();
        return;
      }
      while (true) {
        NodeState old = ref.get();
        Map<String, int[]> fromGrants = usageFromGrants(node.name());
        NodeState next = old.reregistered(node, fromGrants);
        if (ref.compareAndSet(old, next)) {
          return;
        }
      }
    }
  }

  /** Removes a node. Grants on it stay held and count again if it comes back. */
  public boolean removeNode(String name) {
    synchronized (registrationLock) {
      boolean removed = nodes.remove(name) != null;
      if (removed) {
        rebuildNodeList();
      }
      return removed;
    }
  }

  private void rebuildNodeList() {
    List<String> names = new ArrayList<>();
    List<AtomicReference<NodeState>> refs = new ArrayList<>();
    // A set, not names.contains: registering n nodes must not cost O(n^3).
    Set<String> listed = new HashSet<>();
    for (String name : nodeList.names) {
      AtomicReference<NodeState> ref = nodes.get(name);
      if (ref != null) {
        names.add(name);
        refs.add(ref);
        listed.add(name);
      }
    }
    for (Map.Entry<String, AtomicReference<NodeState>> e : nodes.entrySet()) {
      if (listed.add(e.getKey())) {
        names.add(e.getKey());
        refs.add(e.getValue());
      }
    }
    nodeList = new NodeList(names, refs);
  }

  private Map<String, int[]> usageFromGrants(String node) {
    Map<String, int[]> usage = new HashMap<>();
    for (Held held : pods.values()) {
      if (!held.grant.node().equals(node)) {
        continue;
      }
      PodUsage u = held.usage;
      for (int i = 0; i < u.uuids.length; i++) {
        int[] sum = usage.computeIfAbsent(u.uuids[i], k -> new int[3]);
        sum[0] += u.memory[i];
        sum[1] += u.cores[i];
        sum[2] += u.slots[i];
      }
    }
    return usage;
  }

  /** Names of the registered nodes, in registration order. */
  public List<String> nodeNames() {
    return List.of(nodeList.names);
  }

  /**
   * The current snapshot of every node, in registration order. Package-private on purpose: it lets a
   * same-package tool (the fit-path benchmark's raw-scan floor) read the very arrays {@link #filter}
   * scans, without widening the public API.
   */
  NodeState[] snapshots() {
    NodeList list = nodeList;
    NodeState[] out = new NodeState[list.refs.length];
    for (int i = 0; i < out.length; i++) {
      out[i] = list.refs[i].get();
    }
    return out;
  }

  /** Whether the node is registered. */
  public boolean hasNode(String name) {
    return nodes.containsKey(name);
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
    CompiledRequest compiled = new CompiledRequest(request, resolver, policy, mutex);
    for (int i = 0; i < request.containers().size(); i++) {
      CardDemand d = compiled.appDemand(i);
      if (d != null) {
        policy.observe(d);
      }
    }
    return compiled;
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

    NodeList list = nodeList;
    int count = candidates == null ? list.names.length : candidates.size();
    for (int i = 0; i < count; i++) {
      NodeState state;
      if (candidates == null) {
        state = list.refs[i].get();
      } else {
        AtomicReference<NodeState> ref = nodes.get(candidates.get(i));
        if (ref == null) {
          if (detailed) {
            rejections.add(NodeRejection.unregistered(candidates.get(i)));
          }
          continue;
        }
        state = ref.get();
      }
      double score;
      if (fastDemand != null) {
        if (!fastFits(state, request, fastDemand)) {
          if (detailed) {
            fitter.fit(state, request, null);
            rejections.add(fitter.rejection());
          }
          continue;
        }
        score = request.policy.scoreNode(state, NO_PLACEMENT);
      } else {
        if (!fitter.fit(state, request, quota)) {
          if (detailed) {
            rejections.add(fitter.rejection());
          }
          continue;
        }
        score = request.policy.scoreNode(state, fitter);
      }
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
    return new FilterResult(Optional.of(new Placement(best.name, bestScore, fitter.grant(request, config.schema().vendor()))), fitting, rejections);
  }

  /**
   * The scan's fast path for one container with devices and no constraint that depends on order: the
   * pod fits iff enough cards pass every check, whichever order they are tried in.
   */
  private static boolean fastFits(NodeState node, CompiledRequest req, CardDemand demand) {
    int need = demand.count();
    int n = node.deviceCount;
    if (need > n) {
      return false;
    }
    int cores = demand.cores();
    int absoluteMem = demand.memoryMiB();
    int percent = demand.memoryPercent();
    boolean mutex = req.mutex;
    if (need == 1 && node.roomiestTotalMem >= 0) {
      // The roomiest card, kept in the snapshot itself, decides most nodes without the device array.
      int mem = absoluteMem > 0 ? absoluteMem : (int) ((long) node.roomiestTotalMem * percent / 100);
      int sharers = node.roomiestSharers;
      int totalCores = node.roomiestTotalCores;
      int freeCores = node.roomiestFreeCores;
      if (node.roomiestFreeMem >= mem
          && freeCores >= cores
          && !(mutex && sharers > 0)
          && !(totalCores == 100 && cores == 100 && sharers > 0)
          && !(totalCores != 0 && freeCores == 0 && cores == 0)
          && req.typeAllowed(node.roomiestType)) {
        return true;
      }
    }
    int[] data = node.data;
    int found = 0;
    for (int base = 0, end = n * NodeState.STRIDE; base < end; base += NodeState.STRIDE) {
      if ((data[base + NodeState.FLAGS] & NodeState.FLAG_SCHEDULABLE) == 0) {
        continue;
      }
      int sharers = data[base + NodeState.SHARERS];
      if (data[base + NodeState.SPLIT] <= sharers || (mutex && sharers > 0)) {
        continue;
      }
      int totalMem = data[base + NodeState.TOTAL_MEM];
      int mem = absoluteMem > 0 ? absoluteMem : (int) ((long) totalMem * percent / 100);
      if (totalMem - data[base + NodeState.USED_MEM] < mem) {
        continue;
      }
      int totalCores = data[base + NodeState.TOTAL_CORES];
      int usedCores = data[base + NodeState.USED_CORES];
      if (totalCores - usedCores < cores
          || (totalCores == 100 && cores == 100 && sharers > 0)
          || (totalCores != 0 && usedCores == totalCores && cores == 0)) {
        continue;
      }
      if (!req.typeAllowed(data[base + NodeState.TYPE])) {
        continue;
      }
      if (++found == need) {
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // Reserve and release

  /**
   * Counts a grant, if it still fits: every card's memory, compute and sharing slots, and the
   * namespace's quota, are re-checked atomically against the current state. Linearizable per node and
   * per namespace; there is no global lock.
   */
  public ReserveResult reserve(PodGrant grant) {
    return apply(grant, true);
  }

  /**
   * Counts a grant unconditionally, as when rebuilding the ledger from what the cluster already runs.
   * A grant on a node the engine does not know yet is held and counted once the node registers.
   */
  public ReserveResult restore(PodGrant grant) {
    return apply(grant, false);
  }

  private ReserveResult apply(PodGrant grant, boolean enforce) {
    ReserveResult[] result = new ReserveResult[1];
    pods.compute(
        grant.pod(),
        (pod, held) -> {
          if (held != null) {
            result[0] = new ReserveResult(ReserveResult.Status.ALREADY_RESERVED, pod + " already holds a grant on " + held.grant.node());
            return held;
          }
          PodUsage usage = PodUsage.of(grant);
          result[0] = charge(grant, usage, enforce);
          return result[0].reserved() ? new Held(grant, usage) : null;
        });
    return result[0];
  }

  private ReserveResult charge(PodGrant grant, PodUsage usage, boolean enforce) {
    AtomicReference<NodeState> ref = nodes.get(grant.node());
    if (ref == null) {
      if (enforce) {
        return new ReserveResult(ReserveResult.Status.UNKNOWN, "node " + grant.node() + " is not registered");
      }
      quotas.tryAdd(grant.pod().namespace(), usage.totalMemory, usage.totalCores, false);
      return ReserveResult.RESERVED;
    }
    String namespace = grant.pod().namespace();
    if (!quotas.tryAdd(namespace, usage.totalMemory, usage.totalCores, enforce)) {
      return new ReserveResult(
          ReserveResult.Status.CONFLICT,
          "namespace " + namespace + " quota exceeded by " + usage.totalMemory + " MiB / " + usage.totalCores + " cores of " + grant.pod());
    }
    int n = usage.uuids.length;
    int[] positions = new int[n];
    while (true) {
      NodeState state = ref.get();
      int known = 0;
      for (int i = 0; i < n; i++) {
        int position = state.positionOf(usage.uuids[i]);
        if (position < 0) {
          if (enforce) {
            quotas.subtract(namespace, usage.totalMemory, usage.totalCores);
            return new ReserveResult(ReserveResult.Status.UNKNOWN, "device " + usage.uuids[i] + " is not registered on node " + grant.node());
          }
          continue;
        }
        positions[known] = position;
        known++;
      }
      int[] mem = new int[known];
      int[] cores = new int[known];
      int[] slots = new int[known];
      int k = 0;
      for (int i = 0; i < n; i++) {
        if (state.positionOf(usage.uuids[i]) >= 0) {
          mem[k] = usage.memory[i];
          cores[k] = usage.cores[i];
          slots[k] = usage.slots[i];
          k++;
        }
      }
      if (enforce) {
        String overflow = overflow(state, positions, mem, cores, slots, known);
        if (overflow != null) {
          quotas.subtract(namespace, usage.totalMemory, usage.totalCores);
          return new ReserveResult(ReserveResult.Status.CONFLICT, overflow);
        }
      }
      if (ref.compareAndSet(state, state.withUsage(positions, mem, cores, slots, known, 1))) {
        return ReserveResult.RESERVED;
      }
    }
  }

  private static @Nullable String overflow(NodeState state, int[] positions, int[] mem, int[] cores, int[] slots, int count) {
    for (int i = 0; i < count; i++) {
      int d = positions[i];
      if (state.usedMemoryMiB(d) + mem[i] > state.totalMemoryMiB(d)) {
        return "device " + state.uuids[d] + " has " + (state.totalMemoryMiB(d) - state.usedMemoryMiB(d)) + " MiB free, " + mem[i] + " needed";
      }
      if (state.usedCores(d) + cores[i] > state.totalCores(d)) {
        return "device " + state.uuids[d] + " has " + (state.totalCores(d) - state.usedCores(d)) + " cores free, " + cores[i] + " needed";
      }
      if (state.sharers(d) + slots[i] > state.splitCount(d)) {
        return "device " + state.uuids[d] + " has " + (state.splitCount(d) - state.sharers(d)) + " sharing slots free, " + slots[i] + " needed";
      }
    }
    return null;
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

  private void uncharge(Held held) {
    PodUsage usage = held.usage;
    quotas.subtract(held.grant.pod().namespace(), usage.totalMemory, usage.totalCores);
    AtomicReference<NodeState> ref = nodes.get(held.grant.node());
    if (ref == null) {
      return;
    }
    int n = usage.uuids.length;
    while (true) {
      NodeState state = ref.get();
      int[] positions = new int[n];
      int[] mem = new int[n];
      int[] cores = new int[n];
      int[] slots = new int[n];
      int known = 0;
      for (int i = 0; i < n; i++) {
        int position = state.positionOf(usage.uuids[i]);
        if (position >= 0) {
          positions[known] = position;
          mem[known] = usage.memory[i];
          cores[known] = usage.cores[i];
          slots[known] = usage.slots[i];
          known++;
        }
      }
      if (ref.compareAndSet(state, state.withUsage(positions, mem, cores, slots, known, -1))) {
        return;
      }
    }
  }

  /** The grant a pod holds, if any. */
  public Optional<PodGrant> grant(PodRef pod) {
    Held held = pods.get(pod);
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
    List<PodRef> out = new ArrayList<>();
    for (Held held : pods.values()) {
      if (held.grant.node().equals(node) && held.usage.of(uuid) != null) {
        out.add(held.grant.pod());
      }
    }
    out.sort(null);
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Views

  /** Every node's devices and usage, in registration order. */
  public List<NodeUsage> usage() {
    List<NodeUsage> out = new ArrayList<>();
    NodeList list = nodeList;
    for (int i = 0; i < list.names.length; i++) {
      out.add(usageOf(list.refs[i].get()));
    }
    return out;
  }

  /** One node's devices and usage. */
  public Optional<NodeUsage> usage(String node) {
    AtomicReference<NodeState> ref = nodes.get(node);
    return ref == null ? Optional.empty() : Optional.of(usageOf(ref.get()));
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
      AtomicReference<NodeState> ref = nodes.get(name);
      states.add(ref == null ? null : ref.get());
    }
    return new Explainer(this, quotas.check(request.request.pod().namespace()), fitters.get())
        .explain(request, names, states);
  }
}
