package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import java.math.BigDecimal;
import java.util.Map;
import java.util.Optional;

/**
 * Reads a container's extended resources the way HAMi does: from {@code limits}, falling back to
 * {@code requests}.
 */
public final class ContainerResources {
  private ContainerResources() {}

  /** The container's limit for {@code name}, if set. */
  public static Optional<Quantity> limit(Container container, String name) {
    return lookup(limits(container), name);
  }

  /** The container's limit for {@code name}, else its request, if either is set. */
  public static Optional<Quantity> limitOrRequest(Container container, String name) {
    Optional<Quantity> limit = limit(container, name);
    return limit.isPresent() ? limit : lookup(requests(container), name);
  }

  /** Whether the container sets {@code name} in its limits or its requests. */
  public static boolean isPresent(Container container, String name) {
    return limitOrRequest(container, name).isPresent();
  }

  /**
   * The exact value of the container's limit or request for {@code name}.
   *
   * @throws IllegalArgumentException when the value is not a quantity
   */
  public static Optional<BigDecimal> value(Container container, String name) {
    return limitOrRequest(container, name).map(q -> Quantities.parse(q.toString()));
  }

  /** The container's limits, empty when it has none. */
  public static Map<String, Quantity> limits(Container container) {
    ResourceRequirements r = container.getResources();
    return r == null || r.getLimits() == null ? Map.of() : r.getLimits();
  }

  /** The container's requests, empty when it has none. */
  public static Map<String, Quantity> requests(Container container) {
    ResourceRequirements r = container.getResources();
    return r == null || r.getRequests() == null ? Map.of() : r.getRequests();
  }

  private static Optional<Quantity> lookup(Map<String, Quantity> resources, String name) {
    if (name.isEmpty()) {
      return Optional.empty();
    }
    return Optional.ofNullable(resources.get(name));
  }
}
