package io.vgpu.core.queue;

import java.util.EnumMap;
import java.util.Map;

/**
 * What the pods of one queue ask for and hold, per resource. A parent queue's demand is the sum of its
 * children's, added by {@link ResourceDivision}.
 *
 * @param requested what its pods ask for: held and pending together, as KAI counts a queue's request
 * @param allocated what its pods hold
 */
public record QueueDemand(Map<QueueResource, Double> requested, Map<QueueResource, Double> allocated) {
  /** Nothing asked, nothing held. */
  public static final QueueDemand NONE = new QueueDemand(Map.of(), Map.of());

  /** Copies the maps; an absent resource is 0. */
  public QueueDemand {
    requested = complete(requested, "requested");
    allocated = complete(allocated, "allocated");
  }

  /** What is asked of one resource. */
  public double requested(QueueResource resource) {
    return requested.get(resource);
  }

  /** What is held of one resource. */
  public double allocated(QueueResource resource) {
    return allocated.get(resource);
  }

  private static Map<QueueResource, Double> complete(Map<QueueResource, Double> amounts, String what) {
    EnumMap<QueueResource, Double> out = new EnumMap<>(QueueResource.class);
    for (QueueResource r : QueueResource.values()) {
      double value = amounts.getOrDefault(r, 0.0);
      if (!Double.isFinite(value) || value < 0) {
        throw new IllegalArgumentException(what + " " + r.key() + " " + value + " must be a finite amount not below 0");
      }
      out.put(r, value);
    }
    return Map.copyOf(out);
  }
}
