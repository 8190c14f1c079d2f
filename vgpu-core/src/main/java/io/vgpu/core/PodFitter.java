package io.vgpu.core;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRequest;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * HAMi's fit walk for one pod on one node, with reasons: init containers each against the node as it
 * is (they run one at a time), then app containers one after another against a working copy that
 * accumulates their usage. Each container walks the cards in the policy's order and runs HAMi's checks
 * in HAMi's order.
 *
 * <p>An instance holds reusable scratch arrays and is confined to one thread; evaluating a node
 * allocates nothing.
 */
final class PodFitter implements PlacementView {
  private static final FitReason[] REASONS = FitReason.values();

  private NodeState node;
  /** Where the filter's scan leaves its prefetch sum: a value nobody reads would let the JIT drop the reads. */
  int prefetchSink;
  private int n;
  /** The CPU of the pod being fitted, as the placement reports it to policies. */
  private long cpuMilli = PodRequest.CPU_UNKNOWN;
  // Working usage of the container being fitted.
  private int[] usedMem = new int[16];
  private int[] usedCores = new int[16];
  private int[] sharers = new int[16];
  private int[] order = new int[16];
  // Quota bookkeeping: per card, the peak of earlier init containers and the sum of earlier app ones.
  private int[] initPeakMem = new int[16];
  private int[] initPeakCores = new int[16];
  private int[] appMem = new int[16];
  private int[] appCores = new int[16];

  // Picks of every container that takes cards, in init-then-app order.
  private int containers;
  private int[] containerOf = new int[8];
  private boolean[] containerIsInit = new boolean[8];
  private int[] pickStart = new int[9];
  private int[] pickPos = new int[16];
  private int[] pickMem = new int[16];
  private int[] pickCores = new int[16];
  private int picks;

  // The failure, when the last fit failed.
  final int[] reasonCounts = new int[REASONS.length];
  boolean bareInsufficientDevice;
  int failedCards;
  /** The demand of the container that did not fit, and whether it is an init container. */
  @Nullable CardDemand failedDemand;
  private boolean failedInit;

  // The counts of the last rejection made: a scan's nodes fail for a handful of distinct reasons, so
  // consecutive rejections with equal counts share one (immutable) map.
  private final int[] lastReasonCounts = new int[REASONS.length];
  private @Nullable Map<FitReason, Integer> lastCounts;

  private final WorkingView working = new WorkingView();

  /**
   * Fits the whole pod on the node.
   *
   * @param quota the namespace's quota, or {@code null} when it has no limit
   * @return whether the pod fits; the picks or the reasons are then readable from this object
   */
  boolean fit(NodeState node, CompiledRequest req, QuotaLedger.@Nullable QuotaCheck quota) {
    this.node = node;
    this.n = node.deviceCount;
    this.cpuMilli = req.request.cpuMilli();
    ensureCapacity(n);
    Arrays.fill(reasonCounts, 0);
    bareInsufficientDevice = false;
    failedCards = 0;
    failedDemand = null;
    containers = 0;
    picks = 0;
    pickStart[0] = 0;
    Arrays.fill(initPeakMem, 0, n, 0);
    Arrays.fill(initPeakCores, 0, n, 0);
    Arrays.fill(appMem, 0, n, 0);
    Arrays.fill(appCores, 0, n, 0);

    for (int c = 0; c < req.initDemands.length; c++) {
      CardDemand demand = req.initDemands[c];
      if (demand == null) {
        continue;
      }
      loadUsage();
      if (!fitContainer(req, demand, quota, c, true)) {
        return false;
      }
      for (int i = pickStart[containers - 1]; i < picks; i++) {
        int d = pickPos[i];
        initPeakMem[d] = Math.max(initPeakMem[d], pickMem[i]);
        initPeakCores[d] = Math.max(initPeakCores[d], pickCores[i]);
      }
    }
    loadUsage();
    for (int c = 0; c < req.appDemands.length; c++) {
      CardDemand demand = req.appDemands[c];
      if (demand == null) {
        continue;
      }
      if (!fitContainer(req, demand, quota, c, false)) {
        return false;
      }
      for (int i = pickStart[containers - 1]; i < picks; i++) {
        appMem[pickPos[i]] += pickMem[i];
        appCores[pickPos[i]] += pickCores[i];
      }
    }
    return true;
  }

  /**
   * Why a grant does not fit the node as it is now, or {@code null} when it does: its containers are
   * replayed as the fit walk places them (init containers each against the node as it is, app
   * containers one after another) and every card is put to {@link FitRule} with the grant's amounts,
   * so a reservation refuses exactly what a fresh filter would. Every device must be on the node.
   */
  @Nullable String refusal(NodeState node, CardConstraints constraints, PodGrant grant) {
    this.node = node;
    this.n = node.deviceCount;
    ensureCapacity(n);
    for (ContainerGrant init : grant.initContainers()) {
      loadUsage();
      String refused = replay(constraints, init);
      if (refused != null) {
        return refused;
      }
    }
    loadUsage();
    for (ContainerGrant app : grant.containers()) {
      String refused = replay(constraints, app);
      if (refused != null) {
        return refused;
      }
    }
    return null;
  }

  /** Checks one container's cards against the working usage, then adds them to it. */
  private @Nullable String replay(CardConstraints constraints, ContainerGrant container) {
    List<DeviceGrant> devices = container.devices();
    int count = devices.size();
    ensureContainerCapacity(1, count);
    int[] data = node.data;
    for (int i = 0; i < count; i++) {
      DeviceGrant device = devices.get(i);
      int d = node.positionOf(device.uuid());
      for (int j = 0; j < i; j++) {
        if (pickPos[j] == d) {
          return "device " + device.uuid() + " is granted twice to container " + container.name();
        }
      }
      int base = d * NodeState.STRIDE;
      int refused =
          FitRule.refusals(
              constraints, node, d, data[base + NodeState.FLAGS], data[base + NodeState.TYPE], data[base + NodeState.SPLIT],
              sharers[d], data[base + NodeState.TOTAL_MEM], usedMem[d], device.memoryMiB(), data[base + NodeState.TOTAL_CORES],
              usedCores[d], device.cores());
      if (refused != 0) {
        return FitRule.describe(refused, node, d, usedMem[d], usedCores[d], sharers[d], device.memoryMiB(), device.cores());
      }
      if (constraints.numaBind && i > 0 && node.numa(d) != node.numa(pickPos[0])) {
        return "devices " + node.uuids[pickPos[0]] + " and " + device.uuid() + " of container " + container.name()
            + " are on different NUMA nodes, and the pod binds its cards to one";
      }
      pickPos[i] = d;
    }
    for (int i = 0; i < count; i++) {
      take(pickPos[i], devices.get(i).memoryMiB(), devices.get(i).cores());
    }
    return null;
  }

  /** Adds one container's share of card {@code d} to the working usage. */
  private void take(int d, int mem, int cores) {
    usedMem[d] += mem;
    usedCores[d] += cores;
    sharers[d]++;
  }

  private void loadUsage() {
    int[] data = node.data;
    for (int d = 0; d < n; d++) {
      int base = d * NodeState.STRIDE;
      usedMem[d] = data[base + NodeState.USED_MEM];
      usedCores[d] = data[base + NodeState.USED_CORES];
      sharers[d] = data[base + NodeState.SHARERS];
    }
  }

  private boolean fitContainer(
      CompiledRequest req, CardDemand demand, QuotaLedger.@Nullable QuotaCheck quota, int container, boolean init) {
    int need = demand.count();
    failedDemand = demand;
    failedInit = init;
    if (need > n) {
      bareInsufficientDevice = true;
      failedCards = n;
      return false;
    }
    ensureContainerCapacity(containers + 1, picks + need);
    req.policy.rankCards(working, demand, order);
    int start = picks;
    int picked = 0;
    int prevNuma = -1;
    int[] data = node.data;
    CardConstraints constraints = req.constraints;
    for (int i = 0; i < n; i++) {
      int d = order[i];
      int base = d * NodeState.STRIDE;
      int totalMem = data[base + NodeState.TOTAL_MEM];
      int mem = demand.memoryOn(totalMem);
      int cores = demand.cores();
      int refused =
          FitRule.refusals(
              constraints, node, d, data[base + NodeState.FLAGS], data[base + NodeState.TYPE], data[base + NodeState.SPLIT],
              sharers[d], totalMem, usedMem[d], mem, data[base + NodeState.TOTAL_CORES], usedCores[d], cores);
      if ((refused & FitRule.BEFORE_NUMA) != 0) {
        count(FitRule.reason(refused));
        continue;
      }
      // HAMi's NUMA binding: a card on another NUMA node abandons the picks so far and starts over there.
      if (constraints.numaBind && prevNuma != data[base + NodeState.NUMA]) {
        if (picked > 0) {
          reasonCounts[FitReason.NUMA_NOT_FIT.ordinal()] += picked;
        }
        picked = 0;
        picks = start;
        prevNuma = data[base + NodeState.NUMA];
      }
      if (quota != null && !fitsQuota(quota, start, d, mem, cores, init)) {
        refused |= FitRule.QUOTA;
      }
      if (refused != 0) {
        count(FitRule.reason(refused));
        continue;
      }
      pickPos[picks] = d;
      pickMem[picks] = mem;
      pickCores[picks] = cores;
      picks++;
      picked++;
      if (picked == need) {
        for (int p = start; p < picks; p++) {
          take(pickPos[p], pickMem[p], pickCores[p]);
        }
        containerOf[containers] = container;
        containerIsInit[containers] = init;
        containers++;
        pickStart[containers] = picks;
        failedDemand = null;
        return true;
      }
    }
    if (picked > 0) {
      reasonCounts[FitReason.ALLOCATED_CARDS_INSUFFICIENT_REQUEST.ordinal()] = picked;
    }
    picks = start;
    failedCards = n;
    return false;
  }

  /**
   * HAMi's quota test for one more card: the namespace's usage plus the pod's hypothetical total so far
   * must stay within limits.
   */
  private boolean fitsQuota(QuotaLedger.QuotaCheck quota, int start, int card, int mem, int cores, boolean init) {
    long[] total = podTotal(start, card, mem, cores, init);
    return quota.fits(total[0], total[1]);
  }

  /**
   * The pod's memory and compute if the container being fitted (its picks from {@code start}) also
   * took {@code mem} and {@code cores} on {@code card}, collapsed as the ledger will charge it
   * ({@link PodUsage}): per card, the larger of the init containers' peak and the app containers' sum.
   */
  private long[] podTotal(int start, int card, int mem, int cores, boolean init) {
    long podMem = 0;
    long podCores = 0;
    for (int d = 0; d < n; d++) {
      int curMem = d == card ? mem : 0;
      int curCores = d == card ? cores : 0;
      for (int p = start; p < picks; p++) {
        if (pickPos[p] == d) {
          curMem += pickMem[p];
          curCores += pickCores[p];
        }
      }
      podMem += Math.max(initPeakMem[d], init ? curMem : appMem[d] + curMem);
      podCores += Math.max(initPeakCores[d], init ? curCores : appCores[d] + curCores);
    }
    return new long[] {podMem, podCores};
  }

  /**
   * After a failed fit: the pod's memory and compute if the container that did not fit took {@code
   * mem} and {@code cores} on {@code card} alone, as the quota test counts them.
   */
  long[] failedPodTotalWith(int card, int mem, int cores) {
    return podTotal(picks, card, mem, cores, failedInit);
  }

  private void count(FitReason reason) {
    reasonCounts[reason.ordinal()]++;
  }

  private void ensureCapacity(int devices) {
    if (usedMem.length < devices) {
      int size = Math.max(devices, usedMem.length * 2);
      usedMem = new int[size];
      usedCores = new int[size];
      sharers = new int[size];
      order = new int[size];
      initPeakMem = new int[size];
      initPeakCores = new int[size];
      appMem = new int[size];
      appCores = new int[size];
    }
  }

  private void ensureContainerCapacity(int containerCount, int pickCount) {
    if (containerOf.length < containerCount) {
      int size = Math.max(containerCount, containerOf.length * 2);
      containerOf = Arrays.copyOf(containerOf, size);
      containerIsInit = Arrays.copyOf(containerIsInit, size);
      pickStart = Arrays.copyOf(pickStart, size + 1);
    }
    if (pickPos.length < pickCount) {
      int size = Math.max(pickCount, pickPos.length * 2);
      pickPos = Arrays.copyOf(pickPos, size);
      pickMem = Arrays.copyOf(pickMem, size);
      pickCores = Arrays.copyOf(pickCores, size);
    }
  }

  /** The grant of the pod just fitted on {@code node}: every container in order, empty ones included. */
  PodGrant grant(CompiledRequest req, String vendor) {
    PodRequest pod = req.request;
    List<ContainerGrant> init = new ArrayList<>(pod.initContainers().size());
    List<ContainerGrant> app = new ArrayList<>(pod.containers().size());
    pod.initContainers().forEach(c -> init.add(ContainerGrant.empty(c.name())));
    pod.containers().forEach(c -> app.add(ContainerGrant.empty(c.name())));
    for (int c = 0; c < containers; c++) {
      List<DeviceGrant> devices = new ArrayList<>(cardCount(c));
      for (int i = 0; i < cardCount(c); i++) {
        devices.add(new DeviceGrant(node.uuids[card(c, i)], vendor, memoryMiB(c, i), cores(c, i)));
      }
      List<ContainerGrant> phase = containerIsInit[c] ? init : app;
      int index = containerOf[c];
      phase.set(index, new ContainerGrant(phase.get(index).name(), devices));
    }
    return new PodGrant(pod.pod(), node.name, init, app);
  }

  /** Why the pod just fitted did not fit, in HAMi's terms. */
  NodeRejection rejection() {
    if (bareInsufficientDevice) {
      return new NodeRejection(node.name, NodeRejection.Kind.INSUFFICIENT_DEVICES, Map.of(), failedCards);
    }
    if (lastCounts == null || !Arrays.equals(reasonCounts, lastReasonCounts)) {
      Map<FitReason, Integer> counts = new EnumMap<>(FitReason.class);
      for (int r = 0; r < REASONS.length; r++) {
        if (reasonCounts[r] > 0) {
          counts.put(REASONS[r], reasonCounts[r]);
        }
      }
      NodeRejection first = new NodeRejection(node.name, NodeRejection.Kind.DEVICES, counts, failedCards);
      lastCounts = first.counts();
      System.arraycopy(reasonCounts, 0, lastReasonCounts, 0, REASONS.length);
      return first;
    }
    return new NodeRejection(node.name, NodeRejection.Kind.DEVICES, lastCounts, failedCards);
  }

  // --- The placement just fitted, as policies and the engine read it.

  @Override
  public int containers() {
    return containers;
  }

  @Override
  public int cardCount(int c) {
    return pickStart[c + 1] - pickStart[c];
  }

  @Override
  public int card(int c, int i) {
    return pickPos[pickStart[c] + i];
  }

  @Override
  public int memoryMiB(int c, int i) {
    return pickMem[pickStart[c] + i];
  }

  @Override
  public int cores(int c, int i) {
    return pickCores[pickStart[c] + i];
  }

  @Override
  public long cpuMilli() {
    return cpuMilli;
  }

  /** Memory in use on card {@code d} as the failed container saw it. */
  int workingMemory(int d) {
    return usedMem[d];
  }

  /** Compute in use on card {@code d} as the failed container saw it. */
  int workingCores(int d) {
    return usedCores[d];
  }

  /** Sharers of card {@code d} as the failed container saw it. */
  int workingSharers(int d) {
    return sharers[d];
  }

  /** The node's cards with the usage of the container being fitted, as policies rank them. */
  private final class WorkingView implements NodeView {
    @Override
    public String name() {
      return node.name;
    }

    @Override
    public int deviceCount() {
      return n;
    }

    @Override
    public String uuid(int d) {
      return node.uuids[d];
    }

    @Override
    public int index(int d) {
      return node.index(d);
    }

    @Override
    public String type(int d) {
      return node.types[d];
    }

    @Override
    public int numa(int d) {
      return node.numa(d);
    }

    @Override
    public boolean schedulable(int d) {
      return node.schedulable(d);
    }

    @Override
    public int totalMemoryMiB(int d) {
      return node.totalMemoryMiB(d);
    }

    @Override
    public int usedMemoryMiB(int d) {
      return usedMem[d];
    }

    @Override
    public int totalCores(int d) {
      return node.totalCores(d);
    }

    @Override
    public int usedCores(int d) {
      return usedCores[d];
    }

    @Override
    public int splitCount(int d) {
      return node.splitCount(d);
    }

    @Override
    public int sharers(int d) {
      return sharers[d];
    }

    @Override
    public long freeCpuMilli() {
      return node.freeCpuMilli();
    }
  }
}
