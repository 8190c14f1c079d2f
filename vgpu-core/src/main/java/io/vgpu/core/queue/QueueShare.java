package io.vgpu.core.queue;

/**
 * One queue's part of one resource after a {@link ResourceDivision}, in the resource's units.
 *
 * @param deserved the quota as resolved: {@link ResourceTerms#ALL} becomes the amount divided at the queue's level
 * @param requested what the queue asks for, capped by its limit
 * @param allocated what its pods hold
 * @param fairShare what the division gives it
 * @param maxAllowed its limit, or {@link ResourceTerms#UNLIMITED}
 */
public record QueueShare(double deserved, double requested, double allocated, double fairShare, double maxAllowed) {
  /** Whether the queue has no limit. */
  public boolean unlimited() {
    return maxAllowed == ResourceTerms.UNLIMITED;
  }
}
