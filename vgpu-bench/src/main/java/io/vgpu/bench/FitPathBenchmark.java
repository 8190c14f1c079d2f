package io.vgpu.bench;

import io.vgpu.core.CandidateNodes;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.FitPathFloor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The engine's hot path: one pod request filtered and scored against every node ({@code
 * filterAndScore}, HAMi's binpack or spread at node and card level), and the floor under it ({@code
 * rawScan}: one pass reading every per-device field the fit test reads, once, with its bytes counted
 * so that JMH reports the achieved bandwidth). Divide a result by {@code nodes} for the time per node.
 * {@code extenderScan} is the scan as the scheduler's extender runs it for a pod that most nodes refuse
 * (four whole cards on half-used nodes): every node named, 20 fitting nodes listed, with or without each
 * refused node's reason.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class FitPathBenchmark {

  /** The cluster: {@code nodes} nodes of 8 cards, about half used. */
  @State(Scope.Benchmark)
  public static class Cluster {
    @Param({"100", "1000", "5000"})
    public int nodes;

    Engine engine;
    CompiledRequest binpack;
    CompiledRequest spread;
    CompiledRequest fourWholeCards;
    CandidateNodes everyNode;
    FitPathFloor floor;

    @Setup(Level.Trial)
    public void build() {
      engine = BenchCluster.halfUsed(nodes, false, 42, FitPathFloor.provider());
      binpack = engine.compile(BenchCluster.probe("binpack"));
      spread = engine.compile(BenchCluster.probe("spread"));
      fourWholeCards = engine.compile(BenchCluster.pod("four-cards", new long[] {4, BenchCluster.CARD_MIB, 100}, "binpack"));
      List<String> names = new ArrayList<>(nodes);
      for (int n = 0; n < nodes; n++) {
        names.add(BenchCluster.nodeName(n));
      }
      everyNode = engine.candidates(names, null);
      floor = FitPathFloor.of(engine);
    }
  }

  /** Which of HAMi's policies scores the nodes. */
  @State(Scope.Benchmark)
  public static class Policy {
    @Param({"binpack", "spread"})
    public String policy;
  }

  /** Whether the extender's scan gives each refused node's reason (as when nothing fits) or counts them (as when the pod is placed). */
  @State(Scope.Benchmark)
  public static class Reasons {
    @Param({"true", "false"})
    public boolean reasons;
  }

  /**
   * Gigabytes the raw scan read; JMH reports an operations counter as a rate, so its {@code
   * rawScanBandwidth:gigabytes} row reads in GB/s.
   */
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  @State(Scope.Thread)
  public static class Bandwidth {
    public double gigabytes;

    @Setup(Level.Iteration)
    public void reset() {
      gigabytes = 0;
    }
  }

  @Benchmark
  public FilterResult filterAndScore(Cluster cluster, Policy policy) {
    return cluster.engine.filter("spread".equals(policy.policy) ? cluster.spread : cluster.binpack, null, false);
  }

  @Benchmark
  public FilterResult extenderScan(Cluster cluster, Reasons reasons) {
    return cluster.engine.filterResolved(cluster.fourWholeCards, cluster.everyNode, 20, reasons.reasons);
  }

  @Benchmark
  public long rawScan(Cluster cluster) {
    return cluster.floor.scan();
  }

  /** The raw scan again, measured as a rate so that its bytes come out as GB/s. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public long rawScanBandwidth(Cluster cluster, Bandwidth bandwidth) {
    bandwidth.gigabytes += cluster.floor.bytesPerScan() / 1e9;
    return cluster.floor.scan();
  }
}
