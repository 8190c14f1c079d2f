package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One shape of task in a {@link TargetWorkload}: the CPU it needs, what it needs from each card, and
 * which card types it may use. Memory of the host is deliberately not part of it: the fragmentation
 * measure looks at CPU and cards only, as the FGD paper's does.
 *
 * @param cpuMilli CPU in millicores; 0 where CPU is not modelled
 * @param demand what the task needs from each card, or {@code null} for a task that uses no card
 * @param cardTypes the card types the task may run on (case-insensitive, whole names); empty means any
 */
public record WorkloadClass(long cpuMilli, @Nullable CardDemand demand, List<String> cardTypes)
    implements Comparable<WorkloadClass> {

  private static final Comparator<WorkloadClass> ORDER =
      Comparator.comparingLong(WorkloadClass::cpuMilli)
          .thenComparingInt(c -> c.demand == null ? 0 : c.demand.memoryMiB())
          .thenComparingInt(c -> c.demand == null ? 0 : c.demand.memoryPercent())
          .thenComparingInt(c -> c.demand == null ? 0 : c.demand.cores())
          .thenComparingInt(c -> c.demand == null || c.demand.portion() == null ? 0 : c.demand.portion().hundredths())
          .thenComparingInt(c -> c.demand == null || c.demand.portion() == null ? 0 : c.demand.portion().memoryMiB())
          .thenComparingInt(WorkloadClass::cards)
          .thenComparing(c -> String.join("|", c.cardTypes));

  /** Copies the type list and validates the fields. */
  public WorkloadClass {
    if (cpuMilli < 0) {
      throw new IllegalArgumentException("workload class cpu " + cpuMilli + " is negative");
    }
    cardTypes = List.copyOf(cardTypes);
    for (String type : cardTypes) {
      if (type.isBlank()) {
        throw new IllegalArgumentException("workload class card type list " + cardTypes + " has an empty entry");
      }
    }
  }

  /** A task that uses CPU only. */
  public static WorkloadClass cpuOnly(long cpuMilli) {
    return new WorkloadClass(cpuMilli, null, List.of());
  }

  /** A task with a card demand and no card-type constraint. */
  public static WorkloadClass of(long cpuMilli, CardDemand demand) {
    return new WorkloadClass(cpuMilli, Objects.requireNonNull(demand, "demand"), List.of());
  }

  /** Number of cards the task takes (0 for a CPU-only task). */
  public int cards() {
    return demand == null ? 0 : demand.count();
  }

  /** Whether a card of this type may serve the task. */
  public boolean acceptsType(String type) {
    if (cardTypes.isEmpty()) {
      return true;
    }
    for (String accepted : cardTypes) {
      if (accepted.equalsIgnoreCase(type)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Orders classes by CPU, then per-card memory, memory percentage, compute, card count and types: the
   * order the FGD paper's simulator uses to break ties between equally popular shapes.
   */
  @Override
  public int compareTo(WorkloadClass other) {
    return ORDER.compare(this, other);
  }
}
