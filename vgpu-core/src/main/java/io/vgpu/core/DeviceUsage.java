package io.vgpu.core;

import io.vgpu.api.SchedulableDevice;

/**
 * A device's capacity and what is allocated on it.
 *
 * @param device the device as registered
 * @param cordoned whether the device is cordoned
 * @param usedMemoryMiB memory allocated, in MiB
 * @param usedCores compute allocated
 * @param sharers containers sharing it
 */
public record DeviceUsage(
    SchedulableDevice device, boolean cordoned, int usedMemoryMiB, int usedCores, int sharers) {}
