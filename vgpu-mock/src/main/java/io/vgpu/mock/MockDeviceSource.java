package io.vgpu.mock;

import io.vgpu.api.Device;
import io.vgpu.api.spi.DeviceSource;
import java.util.ArrayList;
import java.util.List;

/**
 * A node of identical mock GPUs of one profile. Device {@code i} has UUID {@code uuidPrefix} followed by
 * {@code i} in two digits, and PCI bus {@code i + 1}.
 */
public final class MockDeviceSource implements DeviceSource {
  /** The UUID prefix of the mock drivers' default device ({@code ...0000} is device 0). */
  public static final String DEFAULT_UUID_PREFIX = "GPU-12345678-1234-1234-1234-1234567800";

  private final List<Device> devices;

  /** {@code count} devices of {@code profile}, all on NUMA node {@code numa}. */
  public MockDeviceSource(GpuProfile profile, int count, String uuidPrefix, int numa) {
    if (count < 0 || count > 100) {
      throw new IllegalArgumentException("mock device count " + count + " must be between 0 and 100");
    }
    List<Device> list = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      list.add(new Device(uuid(uuidPrefix, i), i, profile.name(), profile.memoryMiB(), numa, true, pciBusId(i)));
    }
    this.devices = List.copyOf(list);
  }

  /** The UUID of device {@code index} under {@code prefix}. */
  public static String uuid(String prefix, int index) {
    return prefix + String.format("%02d", index);
  }

  /** The PCI bus id of mock device {@code index}, in NVML's 8-digit-domain form. */
  public static String pciBusId(int index) {
    return String.format("00000000:%02X:00.0", index + 1);
  }

  @Override
  public String name() {
    return "mock";
  }

  @Override
  public List<Device> devices() {
    return devices;
  }
}
