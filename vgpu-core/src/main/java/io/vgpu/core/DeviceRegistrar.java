package io.vgpu.core;

import io.vgpu.api.Device;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.SharingConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns a node's physical devices into the capacity it offers the scheduler, by HAMi's registration
 * rules: memory times {@code deviceMemoryScaling}, 100 compute units times {@code deviceCoreScaling},
 * {@code deviceSplitCount} sharers, and the type is the model name prefixed with the vendor word and a
 * dash unless it already starts with the vendor word ({@code Tesla T4} becomes {@code NVIDIA-Tesla
 * T4}).
 */
public final class DeviceRegistrar {
  private final String vendor;

  /** A registrar for one vendor's devices, e.g. {@code NVIDIA}. */
  public DeviceRegistrar(String vendor) {
    this.vendor = vendor;
  }

  /** The registered type of a model: HAMi prefixes the vendor word when the model lacks it. */
  public String typeOf(String model) {
    return model.startsWith(vendor) ? model : vendor + "-" + model;
  }

  /**
   * Registers one device. A device that reports no memory gets {@code preConfiguredMemoryMiB}.
   */
  public SchedulableDevice register(Device device, SharingConfig config) {
    long memory = device.memoryMiB() > 0 ? device.memoryMiB() : config.preConfiguredMemoryMiB();
    long scaled = (long) Math.floor(memory * config.memoryScaling());
    if (scaled > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          "device " + device.uuid() + ": " + memory + " MiB x deviceMemoryScaling " + config.memoryScaling() + " overflows");
    }
    int cores = (int) Math.floor(100 * config.coreScaling());
    return new SchedulableDevice(
        device.uuid(),
        device.index(),
        typeOf(device.model()),
        (int) scaled,
        cores,
        config.splitCount(),
        device.numa(),
        device.healthy(),
        SchedulableDevice.MODE_SHARED);
  }

  /**
   * Registers a node's devices, skipping those that report no memory when no pre-configured memory is
   * set (as HAMi does for unified-memory parts).
   */
  public List<SchedulableDevice> register(List<Device> devices, SharingConfig config) {
    List<SchedulableDevice> out = new ArrayList<>(devices.size());
    for (Device d : devices) {
      if (d.memoryMiB() == 0 && config.preConfiguredMemoryMiB() == 0) {
        continue;
      }
      out.add(register(d, config));
    }
    return out;
  }
}
