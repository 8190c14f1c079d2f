package io.vgpu.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Per-namespace limits and usage. Each namespace is one atomic record, so a reservation checks and
 * adds in one compare-and-set and two pods of a namespace can never both slip under its limit.
 */
final class QuotaLedger {
  private record State(QuotaLimits limits, long usedMemory, long usedCores) {}

  private final Map<String, AtomicReference<State>> namespaces = new ConcurrentHashMap<>();
  private final int memoryFactor;

  QuotaLedger(int memoryFactor) {
    this.memoryFactor = memoryFactor;
  }

  private AtomicReference<State> entry(String namespace) {
    return namespaces.computeIfAbsent(
        namespace, ns -> new AtomicReference<>(new State(QuotaLimits.NONE, 0, 0)));
  }

  void setLimits(String namespace, QuotaLimits limits) {
    entry(namespace).updateAndGet(s -> new State(limits, s.usedMemory, s.usedCores));
  }

  /** Adds usage; with {@code enforce}, only if it stays within the limits. */
  boolean tryAdd(String namespace, long memory, long cores, boolean enforce) {
    AtomicReference<State> ref = entry(namespace);
    while (true) {
      State s = ref.get();
      State next = new State(s.limits, s.usedMemory + memory, s.usedCores + cores);
      if (enforce && !within(s.limits, next.usedMemory, next.usedCores)) {
        return false;
      }
      if (ref.compareAndSet(s, next)) {
        return true;
      }
    }
  }

  void subtract(String namespace, long memory, long cores) {
    entry(namespace).updateAndGet(s -> new State(s.limits, s.usedMemory - memory, s.usedCores - cores));
  }

  private boolean within(QuotaLimits limits, long memory, long cores) {
    if (limits.memoryMiB() != QuotaLimits.UNLIMITED && memory > limits.memoryMiB() * memoryFactor) {
      return false;
    }
    return limits.cores() == QuotaLimits.UNLIMITED || cores <= limits.cores();
  }

  /** What the fit walk needs to check this namespace, or {@code null} when it has no limit. */
  QuotaCheck check(String namespace) {
    AtomicReference<State> ref = namespaces.get(namespace);
    if (ref == null) {
      return null;
    }
    State s = ref.get();
    if (!s.limits.limitsAnything()) {
      return null;
    }
    long memLimit =
        s.limits.memoryMiB() == QuotaLimits.UNLIMITED ? -1 : s.limits.memoryMiB() * memoryFactor;
    return new QuotaCheck(namespace, memLimit, s.limits.cores(), s.usedMemory, s.usedCores);
  }

  QuotaUsage usage(String namespace) {
    AtomicReference<State> ref = namespaces.get(namespace);
    State s = ref == null ? new State(QuotaLimits.NONE, 0, 0) : ref.get();
    return new QuotaUsage(namespace, s.limits, s.usedMemory, s.usedCores);
  }

  List<QuotaUsage> all() {
    List<QuotaUsage> out = new ArrayList<>();
    namespaces.keySet().stream().sorted().forEach(ns -> out.add(usage(ns)));
    return out;
  }

  /**
   * A namespace's limits and usage at one moment, as the fit walk checks them.
   *
   * @param namespace the namespace
   * @param memoryLimit the effective memory limit (memory factor applied), or -1
   * @param coreLimit the compute limit, or -1
   * @param usedMemory memory in use
   * @param usedCores compute in use
   */
  record QuotaCheck(String namespace, long memoryLimit, long coreLimit, long usedMemory, long usedCores) {
    boolean fits(long podMemory, long podCores) {
      if (memoryLimit >= 0 && usedMemory + podMemory > memoryLimit) {
        return false;
      }
      return coreLimit < 0 || usedCores + podCores <= coreLimit;
    }
  }
}
