package io.vgpu.api;

import java.util.List;
import java.util.Objects;

/**
 * The devices granted to one container, in the order the container sees them (device {@code i} is the
 * container's CUDA device {@code i}). Empty for a container that asked for none.
 *
 * @param name the container's name
 * @param devices the granted devices
 */
public record ContainerGrant(String name, List<DeviceGrant> devices) {

  /** Copies the list and validates the fields. */
  public ContainerGrant {
    Objects.requireNonNull(name, "name");
    devices = List.copyOf(devices);
  }

  /** A container that was granted nothing. */
  public static ContainerGrant empty(String name) {
    return new ContainerGrant(name, List.of());
  }
}
