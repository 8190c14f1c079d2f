package io.vgpu.k8s.deviceplugin;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads a container's shared region — the file every process of the container maps through
 * {@code libvgpu.so} ({@code CUDA_DEVICE_MEMORY_SHARED_CACHE}) — in layout version 1 as {@code
 * vgpu-native/README.md} documents it. Read-only: the node monitor never locks or writes it. Every
 * process of the container can write the file, so what it says is the container's own account: fit for
 * metrics, not for enforcement.
 */
public final class SharedRegion {
  /** "VGPUREG1" in little-endian. */
  static final long MAGIC = 0x3147455255504756L;

  static final int VERSION = 1;

  private SharedRegion() {}

  /**
   * One device of the region, by the CUDA ordinal the container sees.
   *
   * @param ordinal the container's device index
   * @param uuid the device's UUID, empty until a CUDA process learnt it
   * @param memoryLimit the memory limit in bytes the container's first process wrote, 0 for none (not
   *     trusted: the grant is the limit)
   * @param memoryUsed bytes charged by all the container's processes (allocations and contexts)
   * @param memoryPeak the high-water mark of {@code memoryUsed}
   * @param contextBytes memory the last context created on the device took
   * @param smUtilPermille the container's compute utilization at the last controller tick, in permille
   * @param lastKernelNanos wall-clock time of the last kernel launch (CLOCK_REALTIME ns), 0 for none
   */
  public record DeviceUsage(
      int ordinal, String uuid, long memoryLimit, long memoryUsed, long memoryPeak, long contextBytes, int smUtilPermille, long lastKernelNanos) {}

  /**
   * Reads the region at {@code file}.
   *
   * @return its devices with a limit, a UUID or usage; empty when the file is missing, too short, or in
   *     another layout (a half-created file is simply not read yet)
   */
  public static Optional<List<DeviceUsage>> read(Path file) {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      if (channel.size() < 8192) {
        return Optional.empty();
      }
      MappedByteBuffer map = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
      ByteBuffer b = map.order(ByteOrder.LITTLE_ENDIAN);
      if (b.getLong(0) != MAGIC || b.getInt(8) != VERSION) {
        return Optional.empty();
      }
      int count = b.getInt(16);
      int size = b.getInt(20);
      long offset = b.getLong(32);
      if (count < 0 || size < 160 || offset + (long) count * size > channel.size()) {
        return Optional.empty();
      }
      List<DeviceUsage> devices = new ArrayList<>();
      for (int d = 0; d < count; d++) {
        int base = (int) (offset + (long) d * size);
        String uuid = cString(b, base, 96);
        long limit = b.getLong(base + 96);
        long used = b.getLong(base + 112);
        if (uuid.isEmpty() && limit == 0 && used == 0) {
          continue;
        }
        devices.add(new DeviceUsage(d, uuid, limit, used, b.getLong(base + 120), b.getLong(base + 152), b.getInt(base + 136), b.getLong(base + 128)));
      }
      return Optional.of(devices);
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private static String cString(ByteBuffer b, int at, int max) {
    int n = 0;
    while (n < max && b.get(at + n) != 0) {
      n++;
    }
    byte[] bytes = new byte[n];
    b.get(at, bytes);
    return new String(bytes, StandardCharsets.US_ASCII);
  }
}
