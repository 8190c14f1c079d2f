package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Where a fragmentation-aware policy gets its target workload: either given once (the placement
 * benchmark gives the trace's typical tasks), or learned from the pods the engine counts (each once,
 * when its grant is reserved or restored). A learned model keeps the last {@link #WINDOW} card demands
 * and takes their typical classes (the FGD paper's 95% popularity cut); CPU is not part of them,
 * because the engine does not model it.
 *
 * <p>Thread-safe: observations are serialized, and readers see an immutable snapshot.
 */
final class WorkloadModel {
  /** How many recent requests a learned model remembers. */
  static final int WINDOW = 1024;

  static final double POPULARITY_PERCENT = 95;

  private final boolean learning;
  private final CardDemand @Nullable [] recent;
  private final Map<WorkloadClass, Integer> counts = new HashMap<>();
  private int next;
  private volatile TargetWorkload current;

  private WorkloadModel(TargetWorkload initial, boolean learning) {
    this.current = initial;
    this.learning = learning;
    this.recent = learning ? new CardDemand[WINDOW] : null;
  }

  /** A model that always answers {@code workload}. */
  static WorkloadModel fixed(TargetWorkload workload) {
    return new WorkloadModel(workload, false);
  }

  /** A model that learns from {@link #observe}; empty until the first observation. */
  static WorkloadModel learned() {
    return new WorkloadModel(TargetWorkload.EMPTY, true);
  }

  /** The current target workload. */
  TargetWorkload current() {
    return current;
  }

  /** Counts one container's card demand; a fixed model ignores it. */
  void observe(CardDemand demand) {
    if (!learning) {
      return;
    }
    synchronized (this) {
      CardDemand[] window = recent;
      CardDemand evicted = window[next];
      if (evicted != null) {
        counts.merge(WorkloadClass.of(0, evicted), -1, (a, b) -> a + b == 0 ? null : a + b);
      }
      window[next] = demand;
      next = (next + 1) % window.length;
      counts.merge(WorkloadClass.of(0, demand), 1, Integer::sum);
      current = TargetWorkload.typical(counts, POPULARITY_PERCENT);
    }
  }
}
