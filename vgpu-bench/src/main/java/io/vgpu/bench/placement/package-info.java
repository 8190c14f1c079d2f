/**
 * The trace-driven placement benchmark: replays a node list and a pod list in the CSV format of the
 * Alibaba GPU-sharing trace (openb, 2023) under the FGD paper's fill-up protocol, drives the engine's
 * placement policies over the simulator's own cluster state, and reports unallocated GPU share,
 * fragmentation and wall time per seed ({@code vgpu placement-bench}).
 */
@NullMarked
package io.vgpu.bench.placement;

import org.jspecify.annotations.NullMarked;
