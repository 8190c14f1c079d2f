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

  /**
   * 250 nodes, enough for kube-scheduler to sample them (it looks at every node below 100), with 16 to
   * 64 vCPU and one or four cards each (400 cards); 700 pods of shares, whole cards, pairs and CPU-only pods
   * asking for 2 to 14 vCPU and about 520 cards in all, so that the cluster fills up.
   */
  static Trace wide() {
    List<TraceNode> nodes = new ArrayList<>();
    for (int i = 0; i < 250; i++) {
      nodes.add(new TraceNode(String.format("node-%03d", i), 16_000 + 16_000L * (i % 4), 131_072, i % 5 == 0 ? 4 : 1, "T4"));
    }
    int[] shares = {1000, 500, 300, 1000, 0, 700, 250, 1000};
    List<TracePod> pods = new ArrayList<>();
    for (int i = 0; i < 700; i++) {
      int milli = shares[i % shares.length];
      int gpus = milli == 0 ? 0 : i % 11 == 0 ? 2 : 1;
      pods.add(new TracePod(String.format("pod-%03d", i), 2000 + 2000L * (i % 7), 4096, gpus, milli, List.of()));
    }
    return new Trace("wide", nodes, pods);
  }
}
