package io.vgpu.api;

import java.util.Objects;

/**
 * A physical GPU as a {@link io.vgpu.api.spi.DeviceSource} discovers it, before any sharing
 * configuration is applied.
 *
 * @param uuid the device's stable identity, e.g. {@code GPU-12345678-1234-1234-1234-123456780000}
 * @param index the device's index on its node (NVML's index)
 * @param model the product name as the driver reports it, e.g. {@code NVIDIA A100-SXM4-40GB}
 * @param memoryMiB total device memory in MiB
 * @param numa the NUMA node the device is attached to ({@code 0} when unknown)
 * @param healthy whether the device can take new work
 * @param pciBusId the PCI bus id, e.g. {@code 00000000:07:00.0}, or empty when unknown
 */
public record Device(
    String uuid, int index, String model, long memoryMiB, int numa, boolean healthy, String pciBusId) {

  /** Validates the fields. */
  public Device {
    Objects.requireNonNull(uuid, "uuid");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(pciBusId, "pciBusId");
    if (uuid.isBlank()) {
      throw new IllegalArgumentException("device uuid is empty");
    }
    if (index < 0) {
      throw new IllegalArgumentException("device " + uuid + ": index " + index + " is negative");
    }
    if (memoryMiB < 0) {
      throw new IllegalArgumentException("device " + uuid + ": memoryMiB " + memoryMiB + " is negative");
    }
    if (numa < 0) {
      throw new IllegalArgumentException("device " + uuid + ": numa " + numa + " is negative");
    }
  }

  /** Returns a copy of this device with the given health. */
  public Device withHealthy(boolean newHealthy) {
    return new Device(uuid, index, model, memoryMiB, numa, newHealthy, pciBusId);
  }
}
