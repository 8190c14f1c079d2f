package io.vgpu.core;

import java.util.List;

/**
 * A node's devices and their usage at one moment.
 *
 * @param node the node's name
 * @param devices its devices in registration order
 */
public record NodeUsage(String node, List<DeviceUsage> devices) {
  /** Copies the list. */
  public NodeUsage {
    devices = List.copyOf(devices);
  }
}
