package io.vgpu.mock;

import java.util.Objects;

/**
 * One kind of mock GPU, as {@code profiles.csv} defines it.
 *
 * @param profile the key users select it by, e.g. {@code A100-SXM4-40GB}
 * @param name the product name as NVML reports it, e.g. {@code NVIDIA A100-SXM4-40GB}
 * @param memoryMiB total memory in MiB
 * @param computeCapability {@code major.minor}
 * @param multiprocessors number of streaming multiprocessors
 * @param maxThreadsPerMultiprocessor threads per multiprocessor
 * @param architecture architecture family, e.g. {@code ampere}
 * @param pciDeviceId NVML's combined device and vendor id, e.g. {@code 0x20B010DE}
 */
public record GpuProfile(
    String profile,
    String name,
    long memoryMiB,
    String computeCapability,
    int multiprocessors,
    int maxThreadsPerMultiprocessor,
    String architecture,
    long pciDeviceId) {

  /** Validates the fields. */
  public GpuProfile {
    Objects.requireNonNull(profile, "profile");
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(computeCapability, "computeCapability");
    Objects.requireNonNull(architecture, "architecture");
    if (memoryMiB <= 0 || multiprocessors <= 0 || maxThreadsPerMultiprocessor <= 0) {
      throw new IllegalArgumentException("profile " + profile + ": memory, multiprocessors and threads must be positive");
    }
  }
}
