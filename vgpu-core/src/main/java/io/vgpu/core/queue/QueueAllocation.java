package io.vgpu.core.queue;

import java.util.Optional;

/**
 * What the pods charged to one queue hold, as the engine counts it at reservation. GPU is in hundredths
 * of a card, the unit of a card portion, so sums are exact.
 *
 * @param queue the queue's name
 * @param spec the queue as last set, or empty once it was removed while pods still held grants in it
 * @param gpuHundredths GPU held by pods charged to this queue itself, in hundredths of a card
 * @param cpuMilli CPU held by those pods, in millicores (pods whose CPU is not known count 0)
 * @param pods how many pods are charged to it
 * @param subtreeGpuHundredths GPU held in this queue and every queue below it
 * @param subtreeCpuMilli CPU held in this queue and every queue below it
 */
public record QueueAllocation(
    String queue, Optional<QueueSpec> spec, long gpuHundredths, long cpuMilli, int pods, long subtreeGpuHundredths, long subtreeCpuMilli) {

  /** GPU held in this queue and below, in cards. */
  public double subtreeGpu() {
    return subtreeGpuHundredths / 100.0;
  }
}
