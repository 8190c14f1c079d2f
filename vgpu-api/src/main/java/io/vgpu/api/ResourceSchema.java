package io.vgpu.api;

import java.util.Objects;

/**
 * A vendor's resource vocabulary and request defaults: the names pods use to ask for devices and the
 * values that fill what a pod leaves out. The NVIDIA schema uses HAMi's names and defaults, so pods
 * written for HAMi need no change.
 *
 * @param vendor the vendor's common word, written into allocation annotations (e.g. {@code NVIDIA})
 * @param countResource number of devices per container, e.g. {@code nvidia.com/gpu}
 * @param memoryResource device memory per device in MiB, e.g. {@code nvidia.com/gpumem}
 * @param memoryPercentageResource device memory as a percentage of each device, e.g. {@code
 *     nvidia.com/gpumem-percentage}
 * @param coresResource compute share per device in percent, e.g. {@code nvidia.com/gpucores}
 * @param priorityResource task priority, e.g. {@code nvidia.com/priority}
 * @param memoryFactor multiplier applied to requested memory and to memory quotas; values below 1 act as 1
 * @param defaultMemoryMiB memory per device when a container asks for neither MiB nor a percentage; 0
 *     means the whole device
 * @param defaultCores compute share when a container asks for none
 * @param defaultDeviceCount device count added by admission to a container that asks for memory or
 *     cores but no count; 0 adds none
 */
public record ResourceSchema(
    String vendor,
    String countResource,
    String memoryResource,
    String memoryPercentageResource,
    String coresResource,
    String priorityResource,
    int memoryFactor,
    long defaultMemoryMiB,
    int defaultCores,
    int defaultDeviceCount) {

  /** Validates the fields. */
  public ResourceSchema {
    Objects.requireNonNull(vendor, "vendor");
    Objects.requireNonNull(countResource, "countResource");
    Objects.requireNonNull(memoryResource, "memoryResource");
    Objects.requireNonNull(memoryPercentageResource, "memoryPercentageResource");
    Objects.requireNonNull(coresResource, "coresResource");
    Objects.requireNonNull(priorityResource, "priorityResource");
    if (vendor.isBlank()) {
      throw new IllegalArgumentException("vendor word is empty");
    }
    if (countResource.isBlank()) {
      throw new IllegalArgumentException("resourceCountName is empty");
    }
    if (defaultMemoryMiB < 0) {
      throw new IllegalArgumentException("defaultMemory " + defaultMemoryMiB + " must not be negative");
    }
    if (defaultCores < 0) {
      throw new IllegalArgumentException("defaultCores " + defaultCores + " must not be negative");
    }
    if (defaultDeviceCount < 0) {
      throw new IllegalArgumentException(
          "defaultGPUNum " + defaultDeviceCount + " must not be negative");
    }
  }

  /** HAMi's NVIDIA schema with HAMi's defaults. */
  public static ResourceSchema nvidia() {
    return new ResourceSchema(
        "NVIDIA",
        "nvidia.com/gpu",
        "nvidia.com/gpumem",
        "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores",
        "nvidia.com/priority",
        1,
        0,
        0,
        1);
  }

  /** The memory factor as applied: values below 1 count as 1. */
  public int effectiveMemoryFactor() {
    return Math.max(memoryFactor, 1);
  }

  /** Returns a copy with other request defaults. */
  public ResourceSchema withDefaults(long memoryMiB, int cores, int deviceCount) {
    return new ResourceSchema(
        vendor,
        countResource,
        memoryResource,
        memoryPercentageResource,
        coresResource,
        priorityResource,
        memoryFactor,
        memoryMiB,
        cores,
        deviceCount);
  }

  /** Returns a copy with another memory factor. */
  public ResourceSchema withMemoryFactor(int factor) {
    return new ResourceSchema(
        vendor,
        countResource,
        memoryResource,
        memoryPercentageResource,
        coresResource,
        priorityResource,
        factor,
        defaultMemoryMiB,
        defaultCores,
        defaultDeviceCount);
  }

  /** Returns a copy with other resource names. */
  public ResourceSchema withResourceNames(
      String count, String memory, String memoryPercentage, String cores, String priority) {
    return new ResourceSchema(
        vendor,
        count,
        memory,
        memoryPercentage,
        cores,
        priority,
        memoryFactor,
        defaultMemoryMiB,
        defaultCores,
        defaultDeviceCount);
  }
}
