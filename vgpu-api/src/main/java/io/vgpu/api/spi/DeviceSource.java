package io.vgpu.api.spi;

import io.vgpu.api.Device;
import java.util.List;

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

  /** Releases what the source holds (driver handles, threads). The default holds nothing. */
  @Override
  default void close() {}
}
