/**
 * The plug-in points of vgpu: where devices come from ({@link io.vgpu.api.spi.DeviceSource}), how
 * nodes and cards are chosen ({@link io.vgpu.api.spi.PlacementPolicy}) and what a container receives
 * for its grant ({@link io.vgpu.api.spi.ContainerContract}). Implementations are found with {@link
 * java.util.ServiceLoader} through their providers.
 */
@NullMarked
package io.vgpu.api.spi;

import org.jspecify.annotations.NullMarked;
