/**
 * Placement policies beyond HAMi's binpack and spread, each registered by name through {@link
 * io.vgpu.api.spi.PlacementPolicyProvider}: {@code random}, {@code bestfit}, {@code fgd} (fragmentation
 * gradient descent, Weng et al., USENIX ATC '23) and {@code vgpu}, ours. The fragmentation-aware ones
 * measure a node against a {@link io.vgpu.core.policy.TargetWorkload}, either fixed (as in the placement
 * benchmark) or learned from the pods the engine counts, each once, when its grant is reserved or
 * restored.
 */
@NullMarked
package io.vgpu.core.policy;

import org.jspecify.annotations.NullMarked;
