/**
 * Benchmarks of the engine's hot paths and the trace-driven placement benchmark.
 */
@NullMarked
package io.vgpu.bench;

import org.jspecify.annotations.NullMarked;
