package io.vgpu.bench.placement;

/**
 * One node of a trace's node list.
 *
 * @param name the node's name ({@code sn})
 * @param cpuMilli CPU capacity in millicores
 * @param memoryMiB host memory in MiB
 * @param gpus number of GPUs
 * @param model GPU model, empty on CPU-only nodes
 */
public record TraceNode(String name, long cpuMilli, long memoryMiB, int gpus, String model) {}
