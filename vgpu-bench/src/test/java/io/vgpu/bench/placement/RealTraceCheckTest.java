package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * One seed of the real traces (not part of the repository: see {@link SharedTraces} for where they are
 * looked for): FGD must land within the paper's spread and vgpu below it, and vgpu as deployed,
 * learning online, must keep the oracle's quality. Skipped, saying where the trace was looked for, when
 * it is missing. The 10-seed runs are made on demand, not here.
 */
class RealTraceCheckTest {
  private static final Path DIR = SharedTraces.dir();

  private static Trace trace(String pods) {
    Path nodeFile = DIR.resolve("openb_node_list_gpu_node.csv");
    Path podFile = DIR.resolve(pods);
    assumeTrue(
        Files.isReadable(nodeFile) && Files.isReadable(podFile),
        "the Alibaba trace is not at " + DIR + " (put shared/traces/alibaba-gpu-v2023 beside the checkout, or set -Dvgpu.trace.dir)");
    return Trace.read(nodeFile, podFile);
  }

  @Test
  void oneSeedOfTheDefaultTraceLandsWhereThePaperDoesAndVgpuAsDeployedKeepsItsGain() {
    Trace trace = trace("openb_pod_list_default.csv");
    List<PolicyReport> reports = PlacementBenchmark.run(trace, "fgd,vgpu", List.of(42L), 1.3, 2);

    double fgd = reports.get(0).seeds().get(0).unallocatedAt100();
    double vgpu = reports.get(1).seeds().get(0).unallocatedAt100();
    // The paper's ten FGD seeds span 4.62..4.94 (median 4.77); one of ours may sit 0.3 outside.
    assertThat(fgd).isBetween(4.32, 5.24);
    assertThat(vgpu).isLessThan(4.5).isLessThan(fgd);
    // Learning its workload online from the pods it reserves, with CPU and card types from the
    // cluster, vgpu as deployed does about as well as given the whole trace (seeds 42-46: 4.17
    // against 4.14) when the CPU-only pods go through it too, as in the oracle run. With them placed
    // by kube-scheduler, as deployed today, it is only level with fgd (README, "As deployed").
    double deployed = AsDeployedSimulation.run(PreparedTrace.of(trace), "vgpu", AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.POLICY), 1.3, 42).unallocatedAt100();
    assertThat(deployed).isLessThan(vgpu + 0.25).isLessThan(fgd);
  }

  @Test
  void oneSeedOfMultigpu50LandsWhereThePaperDoes() {
    List<PolicyReport> reports = PlacementBenchmark.run(trace("openb_pod_list_multigpu50.csv"), "fgd,vgpu", List.of(42L), 1.3, 2);

    double fgd = reports.get(0).seeds().get(0).unallocatedAt100();
    double vgpu = reports.get(1).seeds().get(0).unallocatedAt100();
    // The paper: 2.91 +- 0.11 over ten seeds.
    assertThat(fgd).isBetween(2.5, 3.4);
    assertThat(vgpu).isLessThan(fgd);
  }
}
