package io.vgpu.api;

import java.util.List;
import java.util.Objects;

/**
 * Which devices a pod may use, from the pod's annotations ({@code nvidia.com/use-gputype},
 * {@code nvidia.com/nouse-gputype}, {@code nvidia.com/use-gpuuuid}, {@code nvidia.com/nouse-gpuuuid},
 * {@code nvidia.com/numa-bind}, {@code nvidia.com/vgpu-mode}).
 *
 * @param useTypes the device type must contain one of these (case-insensitive); empty means any
 * @param avoidTypes the device type must contain none of these (case-insensitive)
 * @param useUuids the device must be one of these; empty means any
 * @param avoidUuids the device must be none of these
 * @param numaBind whether all devices of a container must share one NUMA node
 * @param sharingMode when not empty, a device's sharing mode must be a substring of it
 */
public record DeviceConstraints(
    List<String> useTypes,
    List<String> avoidTypes,
    List<String> useUuids,
    List<String> avoidUuids,
    boolean numaBind,
    String sharingMode) {

  /** No constraint at all. */
  public static final DeviceConstraints NONE =
      new DeviceConstraints(List.of(), List.of(), List.of(), List.of(), false, "");

  /** Copies the lists and validates the fields. */
  public DeviceConstraints {
    useTypes = List.copyOf(useTypes);
    avoidTypes = List.copyOf(avoidTypes);
    useUuids = List.copyOf(useUuids);
    avoidUuids = List.copyOf(avoidUuids);
    Objects.requireNonNull(sharingMode, "sharingMode");
  }

  /** Whether any constraint is set. */
  public boolean isEmpty() {
    return equals(NONE);
  }

  /** Returns a copy with type lists. */
  public DeviceConstraints withTypes(List<String> use, List<String> avoid) {
    return new DeviceConstraints(use, avoid, useUuids, avoidUuids, numaBind, sharingMode);
  }

  /** Returns a copy with UUID lists. */
  public DeviceConstraints withUuids(List<String> use, List<String> avoid) {
    return new DeviceConstraints(useTypes, avoidTypes, use, avoid, numaBind, sharingMode);
  }

  /** Returns a copy with NUMA binding set as given. */
  public DeviceConstraints withNumaBind(boolean value) {
    return new DeviceConstraints(useTypes, avoidTypes, useUuids, avoidUuids, value, sharingMode);
  }

  /** Returns a copy with a sharing-mode constraint. */
  public DeviceConstraints withSharingMode(String value) {
    return new DeviceConstraints(useTypes, avoidTypes, useUuids, avoidUuids, numaBind, value);
  }
}
