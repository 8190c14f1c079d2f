package io.vgpu.core;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A list of candidate node names resolved against one {@link Engine}'s nodes, for filtering many pods
 * against the same list: kube-scheduler sends the same few thousand names with nearly every filter
 * call, and looking each one up again per call is most of a filter's scan at that size. Get one from
 * {@link Engine#candidates(List, CandidateNodes)}, which hands back the previous one while it still
 * holds, and filter with {@link Engine#filterResolved}. Immutable;
 * the nodes' usage is read live through it, so a resolution never shows a stale snapshot, only (once
 * a node joins or leaves the engine) a stale set of entries, which the engine detects and resolves again.
 */
public final class CandidateNodes {
  final Engine engine;
  final long membership;
  final List<String> names;
  /** Each name's ledger entry when resolved, or null for a name the engine did not know. */
  final AtomicReference<NodeState>[] refs;

  CandidateNodes(Engine engine, long membership, List<String> names, AtomicReference<NodeState>[] refs) {
    this.engine = engine;
    this.membership = membership;
    this.names = names;
    this.refs = refs;
  }

  /** The candidate names, in the order given. */
  public List<String> names() {
    return names;
  }

  /** How many candidates. */
  public int size() {
    return names.size();
  }
}
