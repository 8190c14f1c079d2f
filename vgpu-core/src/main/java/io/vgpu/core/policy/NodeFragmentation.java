package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementView;
import org.jspecify.annotations.Nullable;

/**
 * Evaluates F_n(M), a node's fragmentation under a target workload, for the node as it is and for the
 * node after a hypothetical placement. One instance per thread ({@link #local()}); it copies the node's
 * cards into scratch arrays once per {@link #load}, keeps per class the number and idle share of the
 * cards that could host it, and answers "what if this card took that much" in time linear in the
 * number of classes, without allocating.
 */
final class NodeFragmentation {
  private static final ThreadLocal<NodeFragmentation> LOCAL = ThreadLocal.withInitial(NodeFragmentation::new);

  private TargetWorkload workload = TargetWorkload.EMPTY;
  private int n;
  private long freeCpu;
  private int[] freeMemory = new int[16];
  private int[] totalMemory = new int[16];
  private int[] freeCores = new int[16];
  private int[] totalCores = new int[16];
  private int[] sharers = new int[16];
  private int[] split = new int[16];
  private boolean[] usable = new boolean[16];
  private String[] types = new String[16];
  private double[] idle = new double[16];
  private double totalIdle;
  // Per class: cards that could host one unit of the class, and their idle share.
  private int[] hostCount = new int[64];
  private double[] hostIdle = new double[64];
  // hosts[c * n + d]: whether card d could host class c now.
  private boolean[] hosts = new boolean[64 * 16];
  // Per card, whether each class accepts its type (shared rows from the workload; only when typed).
  private boolean[][] accepts = new boolean[16][];
  // Scratch copies for multi-card hypotheticals.
  private int[] tryMemory = new int[16];
  private int[] tryCores = new int[16];
  private int[] trySharers = new int[16];

  static NodeFragmentation local() {
    return LOCAL.get();
  }

  /**
   * Reads the node's cards and CPU, and the per-class host counts under {@code w}. When the cards are
   * in the very state last loaded under the same workload (the engine ranks a node's cards, then scores
   * it; neighbouring nodes are often alike), the host counts are kept: only the CPU is read anew.
   */
  void load(NodeView node, TargetWorkload w) {
    int cards = node.deviceCount();
    ensureCapacity(cards, w.size);
    boolean same = w == workload && cards == n;
    this.freeCpu = node.freeCpuMilli();
    for (int d = 0; d < cards; d++) {
      int total = node.totalMemoryMiB(d);
      int free = total - node.usedMemoryMiB(d);
      int coresTotal = node.totalCores(d);
      int coresFree = coresTotal - node.usedCores(d);
      int cardSharers = node.sharers(d);
      int cardSplit = node.splitCount(d);
      boolean cardUsable = node.schedulable(d);
      String type = w.typed ? node.type(d) : "";
      if (same
          && (totalMemory[d] != total || freeMemory[d] != free || totalCores[d] != coresTotal || freeCores[d] != coresFree
              || sharers[d] != cardSharers || split[d] != cardSplit || usable[d] != cardUsable || !type.equals(types[d]))) {
        same = false;
      }
      totalMemory[d] = total;
      freeMemory[d] = free;
      totalCores[d] = coresTotal;
      freeCores[d] = coresFree;
      sharers[d] = cardSharers;
      split[d] = cardSplit;
      usable[d] = cardUsable;
      types[d] = type;
    }
    if (same) {
      return;
    }
    this.workload = w;
    this.n = cards;
    double sum = 0;
    for (int d = 0; d < n; d++) {
      idle[d] = usable[d] ? CardShares.idle(freeMemory[d], totalMemory[d], freeCores[d], totalCores[d]) : 0;
      sum += idle[d];
    }
    totalIdle = sum;
    if (w.typed) {
      @Nullable String previous = null;
      for (int d = 0; d < n; d++) {
        // A node's cards are usually all of one type: look the row up once.
        accepts[d] = types[d].equals(previous) ? accepts[d - 1] : w.acceptance(types[d]);
        previous = types[d];
      }
    }
    for (int c = 0; c < w.size; c++) {
      int count = 0;
      double idleSum = 0;
      if (w.cards[c] > 0) {
        for (int d = 0; d < n; d++) {
          boolean h = hosts(c, d, freeMemory[d], freeCores[d], sharers[d]);
          hosts[c * n + d] = h;
          if (h) {
            count++;
            idleSum += idle[d];
          }
        }
      }
      hostCount[c] = count;
      hostIdle[c] = idleSum;
    }
  }

  /**
   * Loads the node and writes into {@code decreases[0..n)}, for each card, how much F_n(M) would drop
   * if that card gave one container {@code demand} (negative when fragmentation grows), or NaN for a
   * card that could not take it. How the policies here rank cards starts from this.
   *
   * @return the node's number of cards
   */
  int decreasesPerCard(NodeView node, TargetWorkload w, CardDemand demand, double[] decreases) {
    load(node, w);
    double before = fragmentation();
    for (int d = 0; d < n; d++) {
      int twin = twinOf(d);
      if (twin >= 0) {
        decreases[d] = decreases[twin];
        continue;
      }
      int memory = demand.memoryOn(totalMemory[d]);
      decreases[d] =
          cardHosts(d, memory, demand.cores())
              ? before - fragmentationAfterOne(d, memory, demand.cores(), 0)
              : Double.NaN;
    }
    return n;
  }

  /** An earlier card in exactly the state of card {@code d} (so with the same decrease), or -1. */
  private int twinOf(int d) {
    for (int e = 0; e < d; e++) {
      if (freeMemory[e] == freeMemory[d] && freeCores[e] == freeCores[d] && sharers[e] == sharers[d] && totalMemory[e] == totalMemory[d]
          && totalCores[e] == totalCores[d] && split[e] == split[d] && usable[e] == usable[d] && (!workload.typed || accepts[e] == accepts[d])) {
        return e;
      }
    }
    return -1;
  }

  /** The loaded node's number of cards. */
  int cards() {
    return n;
  }

  /** The loaded node's idle share, in milli-cards. */
  double totalIdle() {
    return totalIdle;
  }

  /** Card {@code d}'s idle share, in milli-cards. */
  double idle(int d) {
    return idle[d];
  }

  /** Card {@code d}'s free memory. */
  int freeMemory(int d) {
    return freeMemory[d];
  }

  /** Card {@code d}'s total memory. */
  int totalMemory(int d) {
    return totalMemory[d];
  }

  /** F_n(M) of the loaded node as it is. */
  double fragmentation() {
    TargetWorkload w = workload;
    double f = 0;
    for (int c = 0; c < w.size; c++) {
      f += w.weight[c] * classFragmentation(c, hostCount[c], hostIdle[c], totalIdle, freeCpu);
    }
    return f;
  }

  /** F_n(M) after the node's free CPU drops by {@code cpuMilli} and nothing else changes. */
  double fragmentationAfterCpu(long cpuMilli) {
    TargetWorkload w = workload;
    long cpu = freeCpu < 0 ? -1 : freeCpu - cpuMilli;
    double f = 0;
    for (int c = 0; c < w.size; c++) {
      f += w.weight[c] * classFragmentation(c, hostCount[c], hostIdle[c], totalIdle, cpu);
    }
    return f;
  }

  /**
   * F_n(M) after card {@code d} gives one more container {@code memoryMiB} and {@code cores}, and the
   * node's free CPU drops by {@code cpuMilli}.
   */
  double fragmentationAfterOne(int d, int memoryMiB, int cores, long cpuMilli) {
    TargetWorkload w = workload;
    int memoryLeft = freeMemory[d] - memoryMiB;
    int coresLeft = freeCores[d] - cores;
    int sharersAfter = sharers[d] + 1;
    double idleAfter = usable[d] ? CardShares.idle(memoryLeft, totalMemory[d], coresLeft, totalCores[d]) : 0;
    double total = totalIdle - idle[d] + idleAfter;
    long cpu = freeCpu < 0 ? -1 : freeCpu - cpuMilli;
    double f = 0;
    for (int c = 0; c < w.size; c++) {
      if (w.cards[c] == 0) {
        f += w.weight[c] * total;
        continue;
      }
      boolean before = hosts[c * n + d];
      boolean after = hosts(c, d, memoryLeft, coresLeft, sharersAfter);
      int count = hostCount[c];
      double hostShare = hostIdle[c];
      if (before) {
        count--;
        hostShare -= idle[d];
      }
      if (after) {
        count++;
        hostShare += idleAfter;
      }
      f += w.weight[c] * classFragmentation(c, count, hostShare, total, cpu);
    }
    return f;
  }

  /** F_n(M) after the whole placement (every container's cards) and its CPU. */
  double fragmentationAfter(PlacementView placement) {
    long cpu = Math.max(0, placement.cpuMilli());
    int containers = placement.containers();
    if (containers == 0) {
      return fragmentationAfterCpu(cpu);
    }
    if (containers == 1 && placement.cardCount(0) == 1) {
      return fragmentationAfterOne(placement.card(0, 0), placement.memoryMiB(0, 0), placement.cores(0, 0), cpu);
    }
    System.arraycopy(freeMemory, 0, tryMemory, 0, n);
    System.arraycopy(freeCores, 0, tryCores, 0, n);
    System.arraycopy(sharers, 0, trySharers, 0, n);
    for (int c = 0; c < containers; c++) {
      for (int i = 0; i < placement.cardCount(c); i++) {
        int d = placement.card(c, i);
        tryMemory[d] -= placement.memoryMiB(c, i);
        tryCores[d] -= placement.cores(c, i);
        trySharers[d]++;
      }
    }
    double total = 0;
    for (int d = 0; d < n; d++) {
      total += usable[d] ? CardShares.idle(tryMemory[d], totalMemory[d], tryCores[d], totalCores[d]) : 0;
    }
    long cpuAfter = freeCpu < 0 ? -1 : freeCpu - cpu;
    TargetWorkload w = workload;
    double f = 0;
    for (int c = 0; c < w.size; c++) {
      int count = 0;
      double hostShare = 0;
      if (w.cards[c] > 0) {
        for (int d = 0; d < n; d++) {
          if (hosts(c, d, tryMemory[d], tryCores[d], trySharers[d])) {
            count++;
            hostShare += usable[d] ? CardShares.idle(tryMemory[d], totalMemory[d], tryCores[d], totalCores[d]) : 0;
          }
        }
      }
      f += w.weight[c] * classFragmentation(c, count, hostShare, total, cpuAfter);
    }
    return f;
  }

  /** Whether card {@code d} could give one container of {@code memoryMiB} and {@code cores} now. */
  boolean cardHosts(int d, int memoryMiB, int cores) {
    return fits(d, memoryMiB, cores, freeMemory[d], freeCores[d], sharers[d]);
  }

  /**
   * F_n(m) for one class: all idle share when the class cannot run on the node (it uses no card, lacks
   * CPU, or too few cards could host it), else the idle share of the cards that could not host it.
   */
  private double classFragmentation(int c, int count, double hostShare, double total, long cpu) {
    TargetWorkload w = workload;
    int need = w.cards[c];
    if (need == 0 || count < need || (cpu >= 0 && cpu < w.cpuMilli[c])) {
      return total;
    }
    return total - hostShare;
  }

  private boolean hosts(int c, int d, int memoryLeft, int coresLeft, int cardSharers) {
    TargetWorkload w = workload;
    if (w.typed && !accepts[d][c]) {
      return false;
    }
    int memory = w.memoryMiB[c] > 0 ? w.memoryMiB[c] : (int) ((long) totalMemory[d] * w.memoryPercent[c] / 100);
    return fits(d, memory, w.cores[c], memoryLeft, coresLeft, cardSharers);
  }

  /** HAMi's per-card checks: health, a free slot, memory, compute, and the two exclusivity rules. */
  private boolean fits(int d, int memory, int cores, int memoryLeft, int coresLeft, int cardSharers) {
    if (!usable[d] || cardSharers >= split[d] || memoryLeft < memory || coresLeft < cores) {
      return false;
    }
    int total = totalCores[d];
    if (total == 100 && cores == 100 && cardSharers > 0) {
      return false;
    }
    return !(total != 0 && coresLeft <= 0 && cores == 0);
  }

  private void ensureCapacity(int devices, int classes) {
    if (freeMemory.length < devices) {
      int size = Math.max(devices, freeMemory.length * 2);
      freeMemory = new int[size];
      totalMemory = new int[size];
      freeCores = new int[size];
      totalCores = new int[size];
      sharers = new int[size];
      split = new int[size];
      usable = new boolean[size];
      types = new String[size];
      accepts = new boolean[size][];
      idle = new double[size];
      tryMemory = new int[size];
      tryCores = new int[size];
      trySharers = new int[size];
    }
    if (hostCount.length < classes) {
      int size = Math.max(classes, hostCount.length * 2);
      hostCount = new int[size];
      hostIdle = new double[size];
    }
    if (hosts.length < classes * devices) {
      int size = Math.max(classes * devices, hosts.length * 2);
      hosts = new boolean[size];
    }
  }
}
