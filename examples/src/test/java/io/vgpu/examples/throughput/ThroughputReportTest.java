package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The report's steady-state keys: figures when the second burst ran, nulls and the reason when not. */
class ThroughputReportTest {
  private static final PlacementAudit CLEAN = new PlacementAudit(200, List.of(), 0, List.of(), 0);

  private static ThroughputResult result(Optional<ThroughputResult.Steady> steady, String skipped) {
    return result(steady, skipped, Optional.of(14.25));
  }

  private static ThroughputResult result(Optional<ThroughputResult.Steady> steady, String skipped, Optional<Double> aotTrainingSeconds) {
    return new ThroughputResult(10, 200, 0, 16, 20.6, 9.7, 82.6, 41.3, 120.1, 35.2, 30, 60, 40, 80, 50, 300, 900, CLEAN, 200, Map.of(), 0, 3.5, List.of(0.5, 1.5), 2.5, 10, steady, skipped, 210, "25.0.3",
        aotTrainingSeconds);
  }

  @Test
  void aClusterTooSmallForTheSteadyBurstReportsNullFiguresAndWhy() {
    String why = "10 nodes hold 37 of the 200 steady-state pods after the measured burst";
    JsonNode o = JsonMapper.builder().build().readTree(ThroughputReport.json(List.of(result(Optional.empty(), why))));

    assertThat(o.path("burstSeconds").asDouble()).isEqualTo(20.6);
    assertThat(o.path("schedulerCpuMsPerPod").asDouble()).isEqualTo(82.6);
    assertThat(o.path("schedulerJitCpuMsPerPod").asDouble()).isEqualTo(41.3);
    assertThat(o.path("standInCpuMsPerPod").asDouble()).isEqualTo(120.1);
    assertThat(o.path("standInJitCpuMsPerPod").asDouble()).isEqualTo(35.2);
    assertThat(o.path("standInsPodsBefore").asInt()).isEqualTo(210);
    assertThat(o.path("schedulerJavaVersion").asString()).isEqualTo("25.0.3");
    assertThat(o.path("schedulerAotTrainingSeconds").asDouble()).isEqualTo(14.25);
    assertThat(ThroughputReport.text(List.of(result(Optional.empty(), why)))).contains("stand-ins' CPU 120.10 ms (JIT 35.20) per pod (they ran 210 pods before)");
    assertThat(o.path("steadyPods").asInt()).isZero();
    assertThat(o.get("schedulerCpuMsPerPodSteady").isNull()).isTrue();
    assertThat(o.get("filterP99MsSteady").isNull()).isTrue();
    assertThat(o.get("schedulerJitCpuMsPerPodSteady").isNull()).isTrue();
    assertThat(o.get("standInJitCpuMsPerPodSteady").isNull()).isTrue();
    assertThat(o.path("steadySkipped").asString()).isEqualTo(why);
    assertThat(ThroughputReport.text(List.of(result(Optional.empty(), why)))).contains("10 nodes: no steady-state burst: " + why);
  }

  @Test
  void theSteadyBurstsFiguresStandBesideTheFirstBursts() {
    ThroughputResult.Steady steady = new ThroughputResult.Steady(200, 400, 4.2, 1.9, 0.4, 95.5, 12.5, 6.1, 17.3, 21.0, 5, CLEAN, 200);
    ThroughputResult r = result(Optional.of(steady), "", Optional.empty());
    JsonNode o = JsonMapper.builder().build().readTree(ThroughputReport.json(List.of(r)));

    assertThat(o.get("schedulerAotTrainingSeconds").isNull()).as("a scheduler started without an AOT cache").isTrue();

    assertThat(o.path("steadyPods").asInt()).isEqualTo(200);
    assertThat(o.path("steadyWarmupPods").asInt()).isEqualTo(400);
    assertThat(o.path("schedulerCpuMsPerPodSteady").asDouble()).isEqualTo(1.9);
    assertThat(o.path("filterP99MsSteady").asDouble()).isEqualTo(17.3);
    assertThat(o.path("schedulerJitCpuMsPerPodSteady").asDouble()).isEqualTo(0.4);
    assertThat(o.path("standInJitCpuMsPerPodSteady").asDouble()).isEqualTo(12.5);
    assertThat(o.path("placedSteady").asInt()).isEqualTo(200);
    assertThat(o.has("steadySkipped")).isFalse();
    assertThat(ThroughputReport.text(List.of(r)))
        .contains("10 nodes: steady state (200 pods after 400): scheduler CPU 1.90 ms per pod (JIT 0.40), filter p50/p99 6.10 / 17.30 ms (p99 inside the scheduler 5 ms), bind p99 21 ms, burst 4.20 s, stand-ins' CPU 95.50 ms per pod (JIT 12.50)")
        .contains("10 nodes: filter p50/p99 inside the scheduler (its histogram's bucket bounds): 2.50 / 10 ms");
    assertThat(o.path("inSchedulerFilterP99Ms").asDouble()).isEqualTo(10);
    assertThat(o.path("inSchedulerFilterP99MsSteady").asDouble()).isEqualTo(5);
    assertThat(ThroughputBenchCommand.sound(r)).isTrue();
    ThroughputResult.Steady lost = new ThroughputResult.Steady(200, 400, 4.2, 1.9, 0.4, 95.5, 12.5, 6.1, 17.3, 21.0, 5, new PlacementAudit(199, List.of("bench/steady-00007: not bound"), 1, List.of(), 0), 199);
    assertThat(ThroughputBenchCommand.sound(result(Optional.of(lost), ""))).as("a steady-state pod lost fails the run").isFalse();
  }
}
