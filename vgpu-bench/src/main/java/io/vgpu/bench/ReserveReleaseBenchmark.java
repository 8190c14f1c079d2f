package io.vgpu.bench;

import io.vgpu.core.Engine;
import io.vgpu.core.Placement;
import io.vgpu.core.ReserveResult;
import java.util.concurrent.TimeUnit;
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
 * Counting a placement and returning it: {@code Engine.reserve} (the placement re-checked against the
 * fit rule on the node's snapshot, which is swapped with compare-and-set) followed by {@code Engine.release}, for one sharing pod on a
 * cluster about half used.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
public class ReserveReleaseBenchmark {
  @Param({"1000"})
  public int nodes;

  private Engine engine;
  private Placement placement;

  @Setup(Level.Trial)
  public void build() {
    engine = BenchCluster.halfUsed(nodes, false, 42);
    placement = engine.filter(engine.compile(BenchCluster.probe("binpack")), null, false).placement().orElseThrow();
  }

  @Benchmark
  public boolean reserveAndRelease() {
    ReserveResult result = engine.reserve(placement);
    if (!result.reserved()) {
      throw new IllegalStateException(result.message());
    }
    return engine.release(placement.grant().pod());
  }
}
