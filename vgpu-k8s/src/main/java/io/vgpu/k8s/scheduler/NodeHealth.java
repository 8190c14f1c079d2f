package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Quantity;
import java.time.Clock;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * HAMi's node handshake: the scheduler stamps {@code hami.io/node-handshake = Requesting_<local time>}
 * on a node, and a node counts as healthy while kubelet reports allocatable devices for it. A node that
 * never reported any gets 60 seconds from the stamp to do so (its device plugin may still be starting);
 * a node whose allocatable count drops to zero is unhealthy at once, and stays so until devices come
 * back — unlike HAMi, it does not flap back for another grace period.
 */
public final class NodeHealth {
  /** The node annotation of the handshake. */
  public static final String HANDSHAKE = "hami.io/node-handshake";

  private static final String REQUESTING = "Requesting_";
  private static final DateTimeFormatter GO_DATE_TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss");

  private final String countResource;
  private final Clock clock;
  private final Duration grace;
  /** Nodes that have reported allocatable devices at least once. */
  private final Set<String> reported = ConcurrentHashMap.newKeySet();

  /** Health by allocatable {@code countResource} (e.g. {@code nvidia.com/gpu}). */
  public NodeHealth(String countResource, Clock clock, Duration grace) {
    this.countResource = countResource;
    this.clock = clock;
    this.grace = grace;
  }

  /** Whether the node's devices may be scheduled on. */
  public boolean healthy(Node node) {
    String name = node.getMetadata().getName();
    if (allocatable(node) > 0) {
      reported.add(name);
      return true;
    }
    if (reported.contains(name)) {
      return false;
    }
    Optional<LocalDateTime> stamped = stamp(node);
    return stamped.isEmpty() || !stamped.get().plus(grace).isBefore(LocalDateTime.now(clock));
  }

  /** The handshake value to write, when the node carries none. */
  public Optional<String> handshakeToWrite(Node node) {
    Map<String, String> annotations = node.getMetadata().getAnnotations();
    String value = annotations == null ? null : annotations.get(HANDSHAKE);
    if (value != null && value.startsWith(REQUESTING)) {
      return Optional.empty();
    }
    return Optional.of(REQUESTING + GO_DATE_TIME.format(LocalDateTime.now(clock)));
  }

  /** Forgets what was learnt about a node that left. */
  public void forget(String node) {
    reported.remove(node);
  }

  private long allocatable(Node node) {
    if (node.getStatus() == null || node.getStatus().getAllocatable() == null) {
      return 0;
    }
    Quantity q = node.getStatus().getAllocatable().get(countResource);
    if (q == null) {
      return 0;
    }
    try {
      return Quantity.getAmountInBytes(q).longValue();
    } catch (IllegalArgumentException e) {
      return 0;
    }
  }

  private static Optional<LocalDateTime> stamp(Node node) {
    Map<String, String> annotations = node.getMetadata().getAnnotations();
    @Nullable String value = annotations == null ? null : annotations.get(HANDSHAKE);
    if (value == null || !value.startsWith(REQUESTING)) {
      return Optional.empty();
    }
    try {
      return Optional.of(LocalDateTime.parse(value.substring(REQUESTING.length()), GO_DATE_TIME));
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
