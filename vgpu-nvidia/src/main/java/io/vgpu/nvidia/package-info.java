/**
 * NVIDIA support for vgpu.
 *
 * <ul>
 *   <li>NVML through JNA: {@link io.vgpu.nvidia.Nvml}, {@link io.vgpu.nvidia.NvmlDevice}, {@link
 *       io.vgpu.nvidia.NvmlEventSet}, failures as {@link io.vgpu.nvidia.NvmlException};
 *   <li>the {@code nvml} device source with its Xid health watcher: {@link
 *       io.vgpu.nvidia.NvidiaDeviceSource}, {@link io.vgpu.nvidia.XidHealthPolicy};
 *   <li>the container contract that arms libvgpu.so: {@link io.vgpu.nvidia.NvidiaContainerContract},
 *       its paths {@link io.vgpu.nvidia.HookLayout}, and the node-side steps {@link
 *       io.vgpu.nvidia.Interposer} (install the library) and {@link io.vgpu.nvidia.HostPreparation}
 *       (write a container's files).
 * </ul>
 */
@NullMarked
package io.vgpu.nvidia;

import org.jspecify.annotations.NullMarked;
