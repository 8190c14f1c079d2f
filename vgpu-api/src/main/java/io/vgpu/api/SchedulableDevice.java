package io.vgpu.api;

import java.util.Objects;

/**
 * A GPU as the scheduler allocates against it: the capacity a node registers for it after its sharing
 * configuration is applied. This is one entry of HAMi's {@code hami.io/node-nvidia-register}
 * annotation.
 *
 * @param uuid the device's identity
 * @param index the device's index on its node
 * @param type the registered type, e.g. {@code NVIDIA A100-SXM4-40GB} or {@code NVIDIA-Tesla T4}
 * @param memoryMiB the memory offered to the scheduler (physical memory times memory scaling)
 * @param cores the compute units offered (100 times core scaling)
 * @param splitCount how many containers may share the device
 * @param numa the device's NUMA node
 * @param healthy whether new work may be placed on it
 * @param mode the sharing mode, {@code hami-core} for interposer-enforced sharing
 */
public record SchedulableDevice(
    String uuid,
    int index,
    String type,
    int memoryMiB,
    int cores,
    int splitCount,
    int numa,
    boolean healthy,
    String mode) {

  /** The sharing mode enforced by the interposer library. */
  public static final String MODE_SHARED = "hami-core";

  /** Validates the fields. */
  public SchedulableDevice {
    Objects.requireNonNull(uuid, "uuid");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(mode, "mode");
    if (uuid.isBlank()) {
      throw new IllegalArgumentException("device uuid is empty");
    }
    if (index < 0 || memoryMiB < 0 || cores < 0 || splitCount < 0 || numa < 0) {
      throw new IllegalArgumentException(
          "device " + uuid + ": index, memory, cores, split count and numa must not be negative");
    }
  }

  /** Returns a copy with the given health. */
  public SchedulableDevice withHealthy(boolean newHealthy) {
    return new SchedulableDevice(
        uuid, index, type, memoryMiB, cores, splitCount, numa, newHealthy, mode);
  }
}
