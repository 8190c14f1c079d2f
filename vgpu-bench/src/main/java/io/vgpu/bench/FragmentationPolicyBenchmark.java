package io.vgpu.bench;

import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
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
 * The fragmentation-aware policies on the engine's full path: one pod filtered against every node,
 * where every fitting node gets a fit walk in the policy's card order and a fragmentation score (the
 * policies learned the workload from the pods that filled the cluster).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class FragmentationPolicyBenchmark {
  @Param({"1000"})
  public int nodes;

  @Param({"fgd", "vgpu"})
  public String policy;

  private Engine engine;
  private CompiledRequest request;

  @Setup(Level.Trial)
  public void build() {
    engine = BenchCluster.halfUsed(nodes, true, 42);
    request = engine.compile(BenchCluster.probe(policy));
  }

  @Benchmark
  public FilterResult filterAndScore() {
    return engine.filter(request, null, false);
  }
}
