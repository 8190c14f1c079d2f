package io.vgpu.core;

/**
 * A namespace's device usage against its quota: the resolved memory and compute of every pod of the
 * namespace the engine holds a grant for.
 *
 * @param namespace the namespace
 * @param limits the namespace's limits
 * @param usedMemoryMiB memory granted to the namespace's pods, in MiB
 * @param usedCores compute granted to the namespace's pods, in percent of a card
 */
public record QuotaUsage(String namespace, QuotaLimits limits, long usedMemoryMiB, long usedCores) {}
