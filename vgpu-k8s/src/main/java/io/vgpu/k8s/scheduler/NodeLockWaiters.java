package io.vgpu.k8s.scheduler;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The binds waiting for each node's lock, in the order they came. Only the first in line tries the lock:
 * when the lock is released it gets its turn at once, and it also looks again now and then on its own
 * (to take over an expired lock, or one whose holder was deleted). Waking every waiter at each release
 * would have them all race for the lock with a write each, all but one conflicting; and kube-scheduler's
 * order would be lost.
 *
 * <p>A waiter notes the node's release count before it tries the lock; a release between its try and
 * its wait ends the wait at once, so no release is missed.
 */
final class NodeLockWaiters {
  private final Map<String, Deque<Waiter>> lines = new HashMap<>();
  private final Map<String, Long> releases = new HashMap<>();

  /** One bind's place in a node's line. */
  static final class Waiter {
    private final String node;
    private CompletableFuture<Void> turn = CompletableFuture.completedFuture(null);

    private Waiter(String node) {
      this.node = node;
    }
  }

  /** How many times the node's lock was released so far (a waiter's reference point). */
  synchronized long releases(String node) {
    return releases.getOrDefault(node, 0L);
  }

  /** Whether binds wait for the node's lock now. */
  synchronized boolean anyWaiting(String node) {
    Deque<Waiter> line = lines.get(node);
    return line != null && !line.isEmpty();
  }

  /** Joins the end of the node's line. */
  synchronized Waiter join(String node) {
    Waiter waiter = new Waiter(node);
    lines.computeIfAbsent(node, n -> new ArrayDeque<>()).addLast(waiter);
    return waiter;
  }

  /** Whether the waiter is first in its line. */
  synchronized boolean first(Waiter waiter) {
    Deque<Waiter> line = lines.get(waiter.node);
    return line != null && line.peekFirst() == waiter;
  }

  /**
   * Completes when the waiter should look at the lock again: at once if the lock was released since
   * {@code seen}; when a release reaches it first in line; else after {@code timeout}.
   */
  CompletableFuture<Void> await(Waiter waiter, long seen, Duration timeout) {
    CompletableFuture<Void> turn = new CompletableFuture<>();
    synchronized (this) {
      if (releases.getOrDefault(waiter.node, 0L) != seen) {
        turn.complete(null);
        return turn;
      }
      waiter.turn = turn;
    }
    return Timeouts.completeOnTimeout(turn, null, Math.max(1, timeout.toMillis()), TimeUnit.MILLISECONDS);
  }

  /** The node's lock was released: the first in line gets its turn. */
  void released(String node) {
    CompletableFuture<Void> turn;
    synchronized (this) {
      releases.merge(node, 1L, Long::sum);
      turn = turnOfFirst(node);
    }
    if (turn != null) {
      turn.complete(null);
    }
  }

  /**
   * Leaves the line: with the lock, or giving up. One giving up from the front hands its turn to the
   * next, who might otherwise wait for a release that already came.
   */
  void leave(Waiter waiter, boolean tookLock) {
    CompletableFuture<Void> turn = null;
    synchronized (this) {
      Deque<Waiter> line = lines.get(waiter.node);
      if (line == null) {
        return;
      }
      boolean wasFirst = line.peekFirst() == waiter;
      line.remove(waiter);
      if (line.isEmpty()) {
        lines.remove(waiter.node);
      } else if (wasFirst && !tookLock) {
        turn = turnOfFirst(waiter.node);
      }
    }
    if (turn != null) {
      turn.complete(null);
    }
  }

  private @Nullable CompletableFuture<Void> turnOfFirst(String node) {
    Deque<Waiter> line = lines.get(node);
    Waiter first = line == null ? null : line.peekFirst();
    return first == null ? null : first.turn;
  }
}
