package io.vgpu.core;

import io.vgpu.api.PodRef;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The gangs reserved by {@link Engine#reserveGang} whose members have not all been bound yet, each with
 * a deadline. A scheduler binds a gang's members one at a time as they come back to it; a member that
 * does not come back by the deadline (deleted, or kept away by something else) must not keep its cards
 * forever, so {@link #expire} hands back the members still unbound once their gang's time is up, for the
 * caller to release. Time is passed in, so the rules are testable without waiting. Thread-safe.
 */
public final class GangHolds {
  private record Hold(String gang, long deadlineNanos, Set<PodRef> unbound) {}

  private final Map<String, Hold> gangs = new LinkedHashMap<>();
  private final Map<PodRef, String> members = new HashMap<>();

  /**
   * Records that a gang's members hold reservations until they are bound, at most until {@code
   * deadlineNanos}; a gang held before is replaced.
   */
  public synchronized void hold(String gang, Collection<PodRef> reserved, long deadlineNanos) {
    drop(gang);
    Hold hold = new Hold(gang, deadlineNanos, new LinkedHashSet<>(reserved));
    gangs.put(gang, hold);
    reserved.forEach(p -> members.put(p, gang));
  }

  /** The gang a pod holds a reservation for, if it is a member not yet bound. */
  public synchronized Optional<String> gangOf(PodRef pod) {
    return Optional.ofNullable(members.get(pod));
  }

  /** Whether the gang holds reservations not yet bound. */
  public synchronized boolean holds(String gang) {
    return gangs.containsKey(gang);
  }

  /** A member was bound (or left on its own): its grant is no longer the hold's to release. */
  public synchronized void bound(PodRef pod) {
    String gang = members.remove(pod);
    if (gang == null) {
      return;
    }
    Hold hold = gangs.get(gang);
    hold.unbound.remove(pod);
    if (hold.unbound.isEmpty()) {
      gangs.remove(gang);
    }
  }

  /**
   * Ends every hold whose deadline has passed and returns its members still unbound, whose grants the
   * caller releases.
   */
  public synchronized List<PodRef> expire(long nowNanos) {
    List<PodRef> out = new ArrayList<>();
    for (Hold hold : List.copyOf(gangs.values())) {
      if (nowNanos - hold.deadlineNanos >= 0) {
        out.addAll(hold.unbound);
        drop(hold.gang);
      }
    }
    return out;
  }

  private void drop(String gang) {
    Hold old = gangs.remove(gang);
    if (old != null) {
      old.unbound.forEach(members::remove);
    }
  }
}
