package io.vgpu.api;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one container asks for, exactly as its manifest says it, before defaults are applied. Amounts a
 * container does not mention are {@link #UNSET}.
 *
 * @param name the container's name
 * @param count number of devices ({@code nvidia.com/gpu}), or {@link #UNSET} when the container asks
 *     for none
 * @param memoryMiB device memory per device in MiB ({@code nvidia.com/gpumem}) before the memory factor,
 *     or {@link #UNSET}
 * @param memoryPercent device memory as a percentage of each device ({@code
 *     nvidia.com/gpumem-percentage}), or {@link #UNSET}
 * @param cores compute share per device in percent ({@code nvidia.com/gpucores}), or {@link #UNSET}
 * @param portion a portion of each device in KAI Scheduler's terms ({@code gpu-fraction} or {@code
 *     gpu-memory}) instead of {@code memoryMiB} and {@code memoryPercent}, or {@code null}
 */
public record ContainerRequest(
    String name, long count, long memoryMiB, long memoryPercent, long cores, @Nullable CardPortion portion) {

  /** Marks an amount the container does not mention. */
  public static final long UNSET = -1;

  /** Validates the fields: every amount is {@link #UNSET} or non-negative. */
  public ContainerRequest {
    Objects.requireNonNull(name, "name");
    requireAmount(name, "count", count);
    requireAmount(name, "memoryMiB", memoryMiB);
    requireAmount(name, "memoryPercent", memoryPercent);
    requireAmount(name, "cores", cores);
    if (portion != null && (memoryMiB != UNSET || memoryPercent != UNSET)) {
      throw new IllegalArgumentException("container " + name + ": a card portion cannot be combined with memoryMiB or memoryPercent");
    }
  }

  /** A request without a card portion. */
  public ContainerRequest(String name, long count, long memoryMiB, long memoryPercent, long cores) {
    this(name, count, memoryMiB, memoryPercent, cores, null);
  }

  /** A container that asks for no device. */
  public static ContainerRequest none(String name) {
    return new ContainerRequest(name, UNSET, UNSET, UNSET, UNSET);
  }

  /** A container that asks for {@code count} devices and nothing else. */
  public static ContainerRequest devices(String name, long count) {
    return new ContainerRequest(name, count, UNSET, UNSET, UNSET);
  }

  /** Returns a copy asking for {@code value} MiB per device. */
  public ContainerRequest withMemoryMiB(long value) {
    return new ContainerRequest(name, count, value, memoryPercent, cores, portion);
  }

  /** Returns a copy asking for {@code value} percent of each device's memory. */
  public ContainerRequest withMemoryPercent(long value) {
    return new ContainerRequest(name, count, memoryMiB, value, cores, portion);
  }

  /** Returns a copy asking for {@code value} percent of each device's compute. */
  public ContainerRequest withCores(long value) {
    return new ContainerRequest(name, count, memoryMiB, memoryPercent, value, portion);
  }

  /** Returns a copy asking for a portion of each device ({@code null}: none). */
  public ContainerRequest withPortion(@Nullable CardPortion value) {
    return new ContainerRequest(name, count, memoryMiB, memoryPercent, cores, value);
  }

  /** Whether the container asks for at least one device. */
  public boolean wantsDevices() {
    return count > 0;
  }

  private static void requireAmount(String container, String field, long value) {
    if (value < UNSET) {
      throw new IllegalArgumentException(
          "container " + container + ": " + field + " " + value + " is negative");
    }
  }
}
