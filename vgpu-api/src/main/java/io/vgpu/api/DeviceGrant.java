package io.vgpu.api;

import java.util.Objects;

/**
 * One device granted to one container: which card, and how much of it. One entry of HAMi's
 * {@code hami.io/vgpu-devices-allocated} annotation ({@code UUID,VENDOR,MEMORY,CORES}).
 *
 * @param uuid the card
 * @param vendor the vendor's common word, e.g. {@code NVIDIA}
 * @param memoryMiB the memory limit on that card
 * @param cores the compute share on that card, in percent
 */
public record DeviceGrant(String uuid, String vendor, int memoryMiB, int cores) {

  /** Validates the fields. */
  public DeviceGrant {
    Objects.requireNonNull(uuid, "uuid");
    Objects.requireNonNull(vendor, "vendor");
    if (uuid.isBlank()) {
      throw new IllegalArgumentException("granted device uuid is empty");
    }
    if (memoryMiB < 0 || cores < 0) {
      throw new IllegalArgumentException(
          "grant on " + uuid + ": memory " + memoryMiB + " and cores " + cores + " must not be negative");
    }
  }
}
