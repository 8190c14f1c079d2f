package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PodDemand;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Where a fragmentation-aware policy gets its target workload: either given once (the placement
 * benchmark's oracle gives the trace's typical tasks), or learned from the pods the engine counts (each
 * once, when its grant is reserved or restored). A learned model keeps the classes of the last {@link
 * #WINDOW} card-using containers it was told about and takes their typical ones (the FGD paper's 95%
 * popularity cut). A container's class is its card demand, the card types its pod may use, and the
 * pod's CPU request (on the pod's first card-using container; 0 where it is not known). Pods that take
 * no card never reach the engine's policies, so a learned workload has no CPU-only class.
 *
 * <p>Thread-safe: observations are serialized, and readers see an immutable snapshot. The snapshot is
 * worked out when it is next read, not at each observation: the engine tells every loaded policy of
 * every pod it counts, and a policy that is loaded but not chosen never reads it.
 */
final class WorkloadModel {
  /** How many recent card-using containers a learned model remembers. */
  static final int WINDOW = 1024;

  static final double POPULARITY_PERCENT = 95;

  private final boolean learning;
  private final WorkloadClass[] recent;
  private final Map<WorkloadClass, Integer> counts = new HashMap<>();
  private int next;
  /** The typical classes of {@link #counts}; {@code null} when an observation has changed them since. */
  private volatile @Nullable TargetWorkload current;

  private WorkloadModel(TargetWorkload initial, boolean learning) {
    this.current = initial;
    this.learning = learning;
    this.recent = new WorkloadClass[learning ? WINDOW : 0];
  }

  /** A model that always answers {@code workload}. */
  static WorkloadModel fixed(TargetWorkload workload) {
    return new WorkloadModel(workload, false);
  }

  /** A model that learns from {@link #observe}; empty until the first observation. */
  static WorkloadModel learned() {
    return new WorkloadModel(TargetWorkload.EMPTY, true);
  }

  /** Whether the model learns from observations. */
  boolean learning() {
    return learning;
  }

  /** The current target workload. */
  TargetWorkload current() {
    TargetWorkload known = current;
    if (known != null) {
      return known;
    }
    synchronized (this) {
      if (current == null) {
        current = TargetWorkload.typical(counts, POPULARITY_PERCENT);
      }
      return current;
    }
  }

  /** Counts one pod's card-using containers; a fixed model ignores it. */
  void observe(PodDemand pod) {
    if (!learning) {
      return;
    }
    List<WorkloadClass> classes = classesOf(pod);
    synchronized (this) {
      for (WorkloadClass k : classes) {
        WorkloadClass evicted = recent[next];
        if (evicted != null) {
          counts.merge(evicted, -1, (a, b) -> a + b == 0 ? null : a + b);
        }
        recent[next] = k;
        next = (next + 1) % recent.length;
        counts.merge(k, 1, Integer::sum);
      }
      current = null;
    }
  }

  /** Counts one container's card demand, of a pod whose CPU and type constraints are not known. */
  void observe(CardDemand demand) {
    observe(new PodDemand(-1, List.of(demand), List.of()));
  }

  /** The workload classes one pod adds: one per card-using container, the pod's CPU on the first. */
  static List<WorkloadClass> classesOf(PodDemand pod) {
    List<CardDemand> cards = pod.cards();
    WorkloadClass[] out = new WorkloadClass[cards.size()];
    for (int c = 0; c < out.length; c++) {
      long cpu = c == 0 && pod.knowsCpu() ? pod.cpuMilli() : 0;
      out[c] = new WorkloadClass(cpu, cards.get(c), pod.cardTypes());
    }
    return List.of(out);
  }
}
