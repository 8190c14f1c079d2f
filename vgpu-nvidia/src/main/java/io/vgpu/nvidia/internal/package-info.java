/**
 * JNA internals of the NVML binding: the loaded library, its interface- and direct-mapped functions
 * and the struct layouts. Not API: use {@link io.vgpu.nvidia.Nvml} and {@link io.vgpu.nvidia.NvmlDevice}.
 */
@NullMarked
package io.vgpu.nvidia.internal;

import org.jspecify.annotations.NullMarked;
