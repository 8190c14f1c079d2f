package io.vgpu.api.spi;

import io.vgpu.api.Device;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Discovers the GPUs of this node: NVML on a real node, profiles on a mock one, a file in tests.
 * Instances come from a {@link DeviceSourceProvider}.
 */
public interface DeviceSource extends AutoCloseable {

  /** The source's name, e.g. {@code nvml} or {@code mock}. */
  String name();

  /**
   * Lists the node's devices in index order, with their current health.
   *
   * @throws DeviceSourceException when the devices cannot be read
   */
  List<Device> devices();

  /**
   * The UUIDs of devices that have left the node (a GPU fallen off the bus): {@link #devices()} still
   * lists them, unhealthy, but a node agent stops offering them at all. Sources whose devices cannot be
   * lost (the default) return an empty set.
   */
  default Set<String> lostDevices() {
    return Set.of();
  }

  /**
   * Reports health changes as they happen, so that a device plugin can withdraw a failed GPU at once
   * instead of at its next poll. After each change (a device turned unhealthy or healthy again), {@code
   * onChange} receives the whole device list as {@link #devices()} would return it then. It is called
   * on the source's own thread, never concurrently with itself, and must return quickly. Sources whose
   * devices cannot change health (the default) never call it.
   *
   * @param onChange receives the device list after each change
   * @return the registration; closing it stops the notifications
   * @throws DeviceSourceException when health cannot be watched
   */
  default Subscription watchHealth(Consumer<List<Device>> onChange) {
    return () -> {};
  }

  /** Releases what the source holds (driver handles, threads). The default holds nothing. */
  @Override
  default void close() {}

  /** A registration made with {@link #watchHealth}; closing it is idempotent and never throws. */
  @FunctionalInterface
  interface Subscription extends AutoCloseable {
    /** Stops the notifications. */
    @Override
    void close();
  }
}
