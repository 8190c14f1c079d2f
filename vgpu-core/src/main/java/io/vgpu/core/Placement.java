package io.vgpu.core;

import io.vgpu.api.PodGrant;
import java.util.Objects;

/**
 * The engine's choice for a pod: the node, the node's score, and the devices each container gets. It
 * remembers the request it was made for, so {@link Engine#reserve(Placement)} checks it against every
 * rule the filter applied (the pod's type, UUID and NUMA constraints and its device policy included).
 */
public final class Placement {
  private final String node;
  private final double score;
  private final PodGrant grant;
  final CompiledRequest request;

  Placement(String node, double score, PodGrant grant, CompiledRequest request) {
    this.node = Objects.requireNonNull(node, "node");
    this.score = score;
    this.grant = Objects.requireNonNull(grant, "grant");
    this.request = Objects.requireNonNull(request, "request");
  }

  /** The chosen node. */
  public String node() {
    return node;
  }

  /** The node's score under the pod's policy (higher won). */
  public double score() {
    return score;
  }

  /** The request this placement was made for. */
  public CompiledRequest request() {
    return request;
  }

  /** The devices per container. */
  public PodGrant grant() {
    return grant;
  }

  /** Placements are equal when they choose the same node, score and devices. */
  @Override
  public boolean equals(Object o) {
    return o instanceof Placement p && node.equals(p.node) && Double.compare(score, p.score) == 0 && grant.equals(p.grant);
  }

  @Override
  public int hashCode() {
    return Objects.hash(node, score, grant);
  }

  @Override
  public String toString() {
    return "Placement[node=" + node + ", score=" + score + ", grant=" + grant + "]";
  }
}
