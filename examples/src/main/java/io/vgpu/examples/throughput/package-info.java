/**
 * {@code vgpu throughput-bench}: how many pods per second the real {@code vgpu scheduler} places at
 * cluster scale, measured through the lab's stand-ins (API server, kube-scheduler) and a kubelet that
 * allocates without starting containers; the same burst through the engine in-process beside it.
 */
@NullMarked
package io.vgpu.examples.throughput;

import org.jspecify.annotations.NullMarked;
