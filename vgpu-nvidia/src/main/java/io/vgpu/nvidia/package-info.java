/**
 * NVIDIA support: NVML through JNA as a DeviceSource, and the container contract that arms libvgpu.so.
 */
@NullMarked
package io.vgpu.nvidia;

import org.jspecify.annotations.NullMarked;
