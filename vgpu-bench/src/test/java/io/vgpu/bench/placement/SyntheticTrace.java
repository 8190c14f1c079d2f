package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.List;

/** A small made-up cluster and workload, big enough for the protocol's curves to mean something. */
final class SyntheticTrace {
  private SyntheticTrace() {}

  /** 40 nodes (8-GPU and 2-GPU), pods mixing shares, whole GPUs, multi-GPU and CPU-only. */
  static Trace sharingHeavy() {
    List<TraceNode> nodes = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      nodes.add(new TraceNode(String.format("big-%02d", i), 96_000, 393_216, 8, "G2"));
      nodes.add(new TraceNode(String.format("small-%02d", i), 32_000, 131_072, 2, "T4"));
    }
    int[] shares = {1000, 1000, 1000, 810, 470, 320, 650, 230, 1000, 0};
    List<TracePod> pods = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      int milli = shares[i % shares.length];
      int gpus = milli == 0 ? 0 : i % 37 == 0 ? 4 : 1;
      pods.add(new TracePod(String.format("pod-%03d", i), 2000 + 1000L * (i % 9), 8192, gpus, milli, List.of()));
    }
    return new Trace("synthetic", nodes, pods);
  }
}
