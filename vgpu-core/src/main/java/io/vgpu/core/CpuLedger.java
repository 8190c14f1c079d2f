package io.vgpu.core;

import io.vgpu.api.PodRef;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cluster's CPU as placement policies see it: each node's allocatable CPU and the CPU requests of
 * the pods counted on it, so that a node's snapshot can answer how much is free. Each pod is counted
 * once, on the node it was last counted on: a pod the embedder reports bound ({@link #bound}), or one
 * the engine reserved that nobody has reported yet ({@link #assume}), which is dropped again when its
 * reservation is released, as kube-scheduler assumes a pod until it sees the binding. Thread-safe.
 */
final class CpuLedger {

  /** One node's CPU; the same object for the node's whole life in the engine. */
  static final class NodeCpu {
    /** The CPU of a node nobody modelled, and of retired ledger entries. */
    static final NodeCpu UNMODELLED = new NodeCpu();

    private volatile long allocatable = -1;
    private final AtomicLong requested = new AtomicLong();

    /** Free CPU in millicores (never below 0), or -1 when the node's CPU is not modelled. */
    long free() {
      long total = allocatable;
      return total < 0 ? -1 : Math.max(0, total - requested.get());
    }
  }

  /** Where a pod's CPU is counted, and whether only because the engine reserved it there. */
  private record PodCpu(String node, long milli, boolean assumed) {}

  private final ConcurrentHashMap<String, NodeCpu> nodes = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<PodRef, PodCpu> pods = new ConcurrentHashMap<>();

  /** The node's CPU account, created on first use. */
  NodeCpu node(String name) {
    return nodes.computeIfAbsent(name, n -> new NodeCpu());
  }

  /** Sets a node's allocatable CPU; -1 stops modelling it. */
  void allocatable(String node, long milli) {
    node(node).allocatable = milli;
  }

  /** Counts a pod's CPU on the node it is bound to, replacing whatever was counted for it. */
  void bound(PodRef pod, String node, long milli) {
    pods.compute(pod, (p, old) -> move(old, new PodCpu(node, milli, false)));
  }

  /** Counts a reserved pod's CPU on its node, unless the pod is counted already. */
  void assume(PodRef pod, String node, long milli) {
    pods.compute(pod, (p, old) -> old != null ? old : move(null, new PodCpu(node, milli, true)));
  }

  /** Stops counting a pod's CPU. */
  void forget(PodRef pod) {
    pods.compute(pod, (p, old) -> move(old, null));
  }

  /** Stops counting a pod's CPU if it is counted only because the engine reserved it. */
  void forgetAssumed(PodRef pod) {
    pods.computeIfPresent(pod, (p, old) -> old.assumed ? move(old, null) : old);
  }

  /** The CPU counted for a pod, or -1 when none is. */
  long cpuOf(PodRef pod) {
    PodCpu counted = pods.get(pod);
    return counted == null ? -1 : counted.milli;
  }

  /** Moves a pod's count from {@code old} to {@code next} (either may be null) and returns {@code next}. */
  private PodCpu move(PodCpu old, PodCpu next) {
    if (old != null) {
      node(old.node).requested.addAndGet(-old.milli);
    }
    if (next != null) {
      node(next.node).requested.addAndGet(next.milli);
    }
    return next;
  }
}
