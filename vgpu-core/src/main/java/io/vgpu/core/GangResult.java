package io.vgpu.core;

import io.vgpu.api.PodRef;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of {@link Engine#reserveGang}: the members now holding grants, or, when too few fitted,
 * none and why.
 *
 * @param placed the members reserved, in the order tried (empty when the gang waits)
 * @param refused each member that got no grant, with one line saying why
 * @param waiting why the gang waits, or {@code null} when it was reserved
 */
public record GangResult(List<Placement> placed, Map<PodRef, String> refused, @Nullable Waiting waiting) {
  /** Copies the collections. */
  public GangResult {
    placed = List.copyOf(placed);
    refused = Collections.unmodifiableMap(new LinkedHashMap<>(refused));
  }

  /** Whether the gang holds its grants. */
  public boolean reserved() {
    return waiting == null;
  }

  /** Why the gang waits, when it does. */
  public Optional<Waiting> waitingReason() {
    return Optional.ofNullable(waiting);
  }
}
