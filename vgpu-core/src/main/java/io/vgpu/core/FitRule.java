package io.vgpu.core;

import io.vgpu.api.FitReason;
import java.util.ArrayList;
import java.util.List;

/**
 * The one rule that decides whether a container's share of one card fits that card in its current
 * state: HAMi's per-card checks (health, cordon, type, UUID lists, sharing slots, the {@code mutex}
 * policy, memory, compute, 100 cores meaning the whole card, no 0-core container on a card whose
 * compute is all taken). The filter's fast path, the full fit walk, explain and reserve all ask it, so a
 * reservation refuses exactly what a fresh filter would.
 *
 * <p>The answer is a set of refusal bits, numbered in the order HAMi's walk runs its checks, so the
 * lowest bit is the reason the walk reports and zero means the card fits. Two checks live outside a
 * card: the namespace quota (callers add {@link #QUOTA}) and NUMA binding (a container's cards share one
 * NUMA node; the walk and the reservation check apply it to the cards they gather).
 */
final class FitRule {
  static final int UNHEALTHY = 1;
  static final int CORDONED = 1 << 1;
  static final int TYPE = 1 << 2;
  static final int UUID = 1 << 3;
  static final int NO_SLOT = 1 << 4;
  static final int MUTEX = 1 << 5;
  static final int QUOTA = 1 << 6;
  static final int MEMORY = 1 << 7;
  static final int CORES = 1 << 8;
  static final int EXCLUSIVE = 1 << 9;
  static final int NO_COMPUTE = 1 << 10;

  /** Refusals HAMi's walk checks before NUMA grouping: such a card does not even start a NUMA group. */
  static final int BEFORE_NUMA = UNHEALTHY | CORDONED | TYPE;

  /** Refusals no change of usage can lift. */
  static final int PERMANENT = UNHEALTHY | CORDONED | TYPE | UUID;

  private static final FitReason[] REASON_OF_BIT = {
    FitReason.CARD_NOT_HEALTH,
    FitReason.CARD_CORDONED,
    FitReason.CARD_TYPE_MISMATCH,
    FitReason.CARD_UUID_MISMATCH,
    FitReason.CARD_TIME_SLICING_EXHAUSTED,
    FitReason.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT,
    FitReason.RESOURCE_QUOTA_NOT_FIT,
    FitReason.CARD_INSUFFICIENT_MEMORY,
    FitReason.CARD_INSUFFICIENT_CORE,
    FitReason.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT,
    FitReason.CARD_COMPUTE_UNITS_EXHAUSTED,
  };

  private FitRule() {}

  /**
   * Why one card cannot take a container's share of it, as refusal bits (0: it fits).
   *
   * @param c what the request asks of its cards
   * @param node the card's node; its UUIDs are read only when the request lists UUIDs
   * @param card the card's position on its node
   * @param flags the card's {@link NodeState#FLAGS}
   * @param typeId the card's interned type and mode ({@link DeviceTypes})
   * @param split how many containers may share the card
   * @param sharers containers that hold the card now
   * @param mem memory the container takes on this card, in MiB
   * @param cores compute the container takes on this card, in percent
   */
  static int refusals(
      CardConstraints c,
      NodeState node,
      int card,
      int flags,
      int typeId,
      int split,
      int sharers,
      int totalMem,
      int usedMem,
      int mem,
      int totalCores,
      int usedCores,
      int cores) {
    int refused = 0;
    if ((flags & NodeState.FLAG_SCHEDULABLE) == 0) {
      refused |= ((flags & NodeState.FLAG_HEALTHY) == 0 ? UNHEALTHY : 0) | ((flags & NodeState.FLAG_CORDONED) != 0 ? CORDONED : 0);
    }
    // Most requests list neither types nor UUIDs: the filter's scan then skips both lookups.
    if (c.listsTypes && !c.typeAllowed(typeId)) {
      refused |= TYPE;
    }
    if (c.listsUuids && !c.uuidAllowed(node.uuids[card])) {
      refused |= UUID;
    }
    if (split <= sharers) {
      refused |= NO_SLOT;
    }
    if (c.mutex && sharers > 0) {
      refused |= MUTEX;
    }
    if (totalMem - usedMem < mem) {
      refused |= MEMORY;
    }
    if (totalCores - usedCores < cores) {
      refused |= CORES;
    }
    if (totalCores == 100 && cores == 100 && sharers > 0) {
      refused |= EXCLUSIVE;
    }
    if (totalCores != 0 && usedCores == totalCores && cores == 0) {
      refused |= NO_COMPUTE;
    }
    return refused;
  }

  /**
   * Whether {@link #refusals} is 0 for the same arguments, decided with early exits and the cheapest
   * checks first: the filter's scan asks this of thousands of cards per pod and needs no reason.
   * {@code FitRuleAgreementTest} checks by property that the two always agree.
   */
  static boolean fits(
      CardConstraints c,
      NodeState node,
      int card,
      int flags,
      int typeId,
      int split,
      int sharers,
      int totalMem,
      int usedMem,
      int mem,
      int totalCores,
      int usedCores,
      int cores) {
    if (totalMem - usedMem < mem || totalCores - usedCores < cores || split <= sharers || (flags & NodeState.FLAG_SCHEDULABLE) == 0) {
      return false;
    }
    if (sharers > 0 && (c.mutex || (cores == 100 && totalCores == 100))) {
      return false;
    }
    if (cores == 0 && totalCores != 0 && usedCores == totalCores) {
      return false;
    }
    return (!c.listsTypes || c.typeAllowed(typeId)) && (!c.listsUuids || c.uuidAllowed(node.uuids[card]));
  }

  /** The reason HAMi's walk reports for a refused card: its first failing check. */
  static FitReason reason(int refusals) {
    return REASON_OF_BIT[Integer.numberOfTrailingZeros(refusals)];
  }

  /** Every reason a card is refused for, in check order, each once. */
  static List<FitReason> reasons(int refusals) {
    List<FitReason> out = new ArrayList<>(Integer.bitCount(refusals));
    for (int rest = refusals; rest != 0; rest &= rest - 1) {
      FitReason reason = reason(rest);
      if (!out.contains(reason)) {
        out.add(reason);
      }
    }
    return out;
  }

  /** One line saying why the card at position {@code d} refuses a share, for its first failing check. */
  static String describe(int refusals, NodeState node, int d, int usedMem, int usedCores, int sharers, int mem, int cores) {
    String device = "device " + node.uuids[d];
    int bit = Integer.lowestOneBit(refusals);
    return switch (bit) {
      case UNHEALTHY -> device + " is unhealthy";
      case CORDONED -> device + " is cordoned";
      case TYPE -> device + " (" + node.types[d] + ", mode " + node.modes[d] + ") is not of a type the pod accepts";
      case UUID -> device + " is excluded by the pod's device UUID lists";
      case NO_SLOT -> device + " has all " + node.splitCount(d) + " sharing slots taken";
      case MUTEX -> device + " already has " + sharers(sharers) + ": the mutex policy needs an unshared card";
      case MEMORY -> device + " has " + (node.totalMemoryMiB(d) - usedMem) + " MiB free, " + mem + " needed";
      case CORES -> device + " has " + (node.totalCores(d) - usedCores) + " cores free, " + cores + " needed";
      case EXCLUSIVE -> device + " already has " + sharers(sharers) + ": 100 cores need the card alone";
      case NO_COMPUTE -> device + " has all its compute allocated: a 0-core container may not join it";
      default -> device + " does not fit: " + reason(refusals).word();
    };
  }

  private static String sharers(int count) {
    return count + (count == 1 ? " sharer" : " sharers");
  }
}
