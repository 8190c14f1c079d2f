package io.vgpu.api;

/**
 * Why a device or node cannot take a request, with HAMi's reason words so that messages, events and
 * dashboards read the same as HAMi's.
 */
public enum FitReason {
  /** The device is unhealthy. */
  CARD_NOT_HEALTH("CardNotHealth"),
  /** The device is cordoned by the node's {@code hami.io/device-cordon} annotation. */
  CARD_CORDONED("CardCordoned"),
  /** The device type or sharing mode does not match the pod's type constraints. */
  CARD_TYPE_MISMATCH("CardTypeMismatch"),
  /** Devices were picked on a NUMA node that could not supply them all. */
  NUMA_NOT_FIT("NumaNotFit"),
  /** The device UUID is excluded by the pod's UUID constraints. */
  CARD_UUID_MISMATCH("CardUuidMismatch"),
  /** Every sharing slot of the device is taken. */
  CARD_TIME_SLICING_EXHAUSTED("CardTimeSlicingExhausted"),
  /** The request needs the device exclusively, but it is in use. */
  EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT("ExclusiveDeviceAllocateConflict"),
  /** The namespace's quota would be exceeded. */
  RESOURCE_QUOTA_NOT_FIT("ResourceQuotaNotFit"),
  /** Not enough free memory on the device. */
  CARD_INSUFFICIENT_MEMORY("CardInsufficientMemory"),
  /** Not enough free compute on the device. */
  CARD_INSUFFICIENT_CORE("CardInsufficientCore"),
  /** All compute of the device is allocated, so even a request for zero compute may not join. */
  CARD_COMPUTE_UNITS_EXHAUSTED("CardComputeUnitsExhausted"),
  /** Some but not all of the requested devices fit. */
  ALLOCATED_CARDS_INSUFFICIENT_REQUEST("AllocatedCardsInsufficientRequest"),
  /** The node has fewer devices of the type than the request's count. */
  NODE_INSUFFICIENT_DEVICE("NodeInsufficientDevice");

  private final String word;

  FitReason(String word) {
    this.word = word;
  }

  /** HAMi's word for this reason, e.g. {@code CardInsufficientMemory}. */
  public String word() {
    return word;
  }

  /** Whether the reason is about one device (as opposed to the node as a whole). */
  public boolean isPerDevice() {
    return this != ALLOCATED_CARDS_INSUFFICIENT_REQUEST && this != NODE_INSUFFICIENT_DEVICE;
  }
}
