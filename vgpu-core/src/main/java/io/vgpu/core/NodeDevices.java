package io.vgpu.core;

import io.vgpu.api.SchedulableDevice;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A node as the engine registers it: its devices with their schedulable capacity, and the devices an
 * administrator has cordoned (HAMi's {@code hami.io/device-cordon}).
 *
 * @param name the node's name
 * @param devices the node's devices, in the order the node registered them
 * @param cordoned UUIDs of devices that must not take new work
 */
public record NodeDevices(String name, List<SchedulableDevice> devices, Set<String> cordoned) {

  /** Copies the collections and validates that device UUIDs are unique. */
  public NodeDevices {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty()) {
      throw new IllegalArgumentException("node name is empty");
    }
    devices = List.copyOf(devices);
    cordoned = Set.copyOf(cordoned);
    Set<String> seen = new HashSet<>();
    for (SchedulableDevice d : devices) {
      if (!seen.add(d.uuid())) {
        throw new IllegalArgumentException("node " + name + ": device " + d.uuid() + " is listed twice");
      }
    }
  }

  /** A node with no cordoned device. */
  public static NodeDevices of(String name, List<SchedulableDevice> devices) {
    return new NodeDevices(name, devices, Set.of());
  }
}
