package io.vgpu.k8s.deviceplugin;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
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

  /** The file's size in layout version 1: header, 16 devices of 256 bytes, 1024 process slots of 576. */
  static final long SIZE = 598016;

  /** The header fields read: magic to devices_offset. */
  private static final int HEADER_READ = 40;
  /** The device fields read, up to context_bytes. */
  private static final int DEVICE_FIELDS = 160;
  private static final int MAX_DEVICES = 64;
  private static final int MAX_DEVICE_SIZE = 4096;

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
    try {
      return Optional.of(inspect(file));
    } catch (RegionFile.Refused e) {
      return Optional.empty();
    }
  }

  /**
   * Reads the region at {@code file}, which sits in a directory its container can write: see {@link
   * RegionFile} for what is refused without blocking or following anything.
   *
   * @throws RegionFile.Refused saying why the file is not a region; {@link RegionFile.Refused#notYet}
   *     when it is missing or still being created (empty, or zero-filled before its magic is written)
   */
  static List<DeviceUsage> inspect(Path file) throws RegionFile.Refused {
    try (RegionFile region = RegionFile.open(file, SIZE)) {
      ByteBuffer header = ByteBuffer.wrap(region.read(0, HEADER_READ)).order(ByteOrder.LITTLE_ENDIAN);
      long magic = header.getLong(0);
      if (magic == 0) {
        throw RegionFile.Refused.NOT_YET;
      }
      if (magic != MAGIC || header.getInt(8) != VERSION) {
        throw new RegionFile.Refused(file + " is not a vgpu shared region of layout version " + VERSION);
      }
      int count = header.getInt(16);
      int size = header.getInt(20);
      long offset = header.getLong(32);
      if (count < 0 || count > MAX_DEVICES || size < DEVICE_FIELDS || size > MAX_DEVICE_SIZE || offset < 0 || offset + (long) count * size > region.size()) {
        throw new RegionFile.Refused(file + " has a malformed header");
      }
      ByteBuffer b = ByteBuffer.wrap(region.read(offset, count * size)).order(ByteOrder.LITTLE_ENDIAN);
      List<DeviceUsage> devices = new ArrayList<>();
      for (int d = 0; d < count; d++) {
        int base = d * size;
        String uuid = cString(b, base, 96);
        long limit = b.getLong(base + 96);
        long used = b.getLong(base + 112);
        if (uuid.isEmpty() && limit == 0 && used == 0) {
          continue;
        }
        devices.add(new DeviceUsage(d, uuid, limit, used, b.getLong(base + 120), b.getLong(base + 152), b.getInt(base + 136), b.getLong(base + 128)));
      }
      return devices;
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
