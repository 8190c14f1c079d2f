package io.vgpu.k8s.watchdog;

/**
 * One container on one card: the unit the watchdog sums, judges and reports.
 *
 * @param namespace the pod's namespace
 * @param pod the pod's name
 * @param podUid the pod's UID
 * @param container the container's name
 * @param deviceUuid the card's UUID
 */
record ContainerCard(String namespace, String pod, String podUid, String container, String deviceUuid) {
  /** {@code namespace/pod container name}, for log lines (which name the card on their own). */
  @Override
  public String toString() {
    return namespace + "/" + pod + " container " + container;
  }
}
