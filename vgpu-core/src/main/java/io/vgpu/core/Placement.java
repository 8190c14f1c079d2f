package io.vgpu.core;

import io.vgpu.api.PodGrant;

/**
 * The engine's choice for a pod: the node, the node's score, and the devices each container gets.
 *
 * @param node the chosen node
 * @param score the node's score under the pod's policy (higher won)
 * @param grant the devices per container
 */
public record Placement(String node, double score, PodGrant grant) {}
