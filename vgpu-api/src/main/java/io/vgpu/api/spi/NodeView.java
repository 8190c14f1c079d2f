package io.vgpu.api.spi;

/**
 * A read-only view of one node's cards and their current usage, as a {@link PlacementPolicy} sees it.
 * Cards are addressed by position {@code 0 <= d < deviceCount()}. Implementations answer without
 * allocating, because policies call them on the scheduler's hot path.
 */
public interface NodeView {

  /** The node's name. */
  String name();

  /** Number of cards. */
  int deviceCount();

  /** The card's UUID. */
  String uuid(int d);

  /** The card's index on the node. */
  int index(int d);

  /**
   * The card's registered type, e.g. {@code NVIDIA A100-SXM4-40GB}, so that a policy can tell which cards
   * a type-constrained workload could use. The default, for views that do not know types, is empty.
   */
  default String type(int d) {
    return "";
  }

  /** The card's NUMA node. */
  int numa(int d);

  /** Whether new work may be placed on the card (healthy and not cordoned). */
  boolean schedulable(int d);

  /** Memory the scheduler may allocate on the card, in MiB. */
  int totalMemoryMiB(int d);

  /** Memory already allocated on the card, in MiB. */
  int usedMemoryMiB(int d);

  /** Compute units the scheduler may allocate on the card (100 per card unless scaled). */
  int totalCores(int d);

  /** Compute units already allocated on the card. */
  int usedCores(int d);

  /** How many containers may share the card. */
  int splitCount(int d);

  /** How many containers share the card now. */
  int sharers(int d);

  /** Free CPU on the node in millicores, or -1 when the node's CPU is not modelled. */
  default long freeCpuMilli() {
    return -1;
  }
}
