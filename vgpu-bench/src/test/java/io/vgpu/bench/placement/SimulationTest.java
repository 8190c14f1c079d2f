package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class SimulationTest {
  private static final List<TraceNode> TWO_NODES =
      List.of(new TraceNode("a", 8000, 8000, 2, "A"), new TraceNode("b", 4000, 4000, 1, "B"));

  @Test
  void aPodFitsOnlyWithEnoughCpuMemoryGpusAndTheRightModel() {
    SimCluster cluster = new SimCluster(TWO_NODES);
    assertThat(cluster.fits(0, pod(8000, 8000, 2, 1000, List.of()))).isTrue();
    assertThat(cluster.fits(0, pod(8001, 1, 1, 100, List.of()))).as("cpu").isFalse();
    assertThat(cluster.fits(0, pod(1, 8001, 1, 100, List.of()))).as("memory").isFalse();
    assertThat(cluster.fits(0, pod(1, 1, 3, 1000, List.of()))).as("gpu count").isFalse();
    assertThat(cluster.fits(0, pod(1, 1, 1, 100, List.of("B")))).as("model").isFalse();
    assertThat(cluster.fits(1, pod(1, 1, 1, 100, List.of("A", "b")))).as("any listed model").isTrue();
    assertThat(cluster.fits(1, pod(4000, 4000, 0, 0, List.of()))).as("cpu only").isTrue();
  }

  @Test
  void sharesAddUpOnAGpuAndAWholeGpuNeedsAnIdleOne() {
    SimCluster cluster = new SimCluster(TWO_NODES);
    cluster.place(0, pod(1, 1, 1, 600, List.of()), new int[] {0});
    cluster.place(0, pod(1, 1, 1, 600, List.of()), new int[] {1});
    assertThat(cluster.fits(0, pod(1, 1, 1, 400, List.of()))).isTrue();
    assertThat(cluster.fits(0, pod(1, 1, 1, 500, List.of()))).isFalse();
    assertThat(cluster.usedMilli()).isEqualTo(1200);
    // The view shows each share on memory (16 MiB per milli) and compute (1 unit per 10 milli).
    SimCluster.View view = cluster.view().at(0);
    assertThat(view.usedMemoryMiB(0)).isEqualTo(600 * 16);
    assertThat(view.usedCores(0)).isEqualTo(60);
    assertThat(view.freeCpuMilli()).isEqualTo(7998);
  }

  @Test
  void runsTheProtocolOnATinyTraceWithHandComputedResults() {
    // Two whole-GPU pods for model B, which one node has once: whatever the order, one lands and the
    // other fails. Capacity 3 GPUs; arrivals 1/3 and 2/3 of it.
    Trace trace = new Trace("tiny", TWO_NODES, List.of(pod(1, 1, 1, 1000, List.of("B")), pod(1, 1, 1, 1000, List.of("B"))));
    for (String policy : PolicyCatalog.NAMES) {
      SeedResult result = Simulation.run(PreparedTrace.of(trace), PolicyCatalog.entry(policy), 0, 42);
      assertThat(result.unallocatedAt(33)).as(policy).isEqualTo(66.67);
      assertThat(result.unallocatedAt(67)).as(policy).isEqualTo(66.67);
      assertThat(result.finalAllocation()).as(policy).isEqualTo(33.33);
      assertThat(result.unallocatedAt100()).as(policy).isNaN();
    }
  }

  @Test
  void theSameSeedGivesTheSameRun() {
    Trace trace = SyntheticTrace.sharingHeavy();
    PreparedTrace prepared = PreparedTrace.of(trace);
    for (String policy : PolicyCatalog.NAMES) {
      SeedResult a = Simulation.run(prepared, PolicyCatalog.entry(policy), 1.3, 7);
      SeedResult b = Simulation.run(prepared, PolicyCatalog.entry(policy), 1.3, 7);
      assertThat(a.unallocatedAt100()).as(policy).isEqualTo(b.unallocatedAt100());
      assertThat(a.fragmentationAmountAt100()).as(policy).isEqualTo(b.fragmentationAmountAt100());
    }
  }

  private static TracePod pod(long cpu, long memory, int gpus, int milli, List<String> spec) {
    return new TracePod("p", cpu, memory, gpus, milli, spec);
  }
}
