package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * One seed on the real default trace, when it is present (it is not part of the repository; set
 * {@code -Dvgpu.trace.dir} to its folder): FGD must land within the paper's spread, and vgpu below it.
 * The full 10-seed reproduction is run on demand, not here.
 */
class RealTraceCheckTest {
  private static final Path DIR = Path.of(System.getProperty("vgpu.trace.dir", "/work/shared/traces/alibaba-gpu-v2023"));

  @Test
  void oneSeedOfTheDefaultTraceLandsWhereThePaperDoes() {
    Path nodes = DIR.resolve("openb_node_list_gpu_node.csv");
    Path pods = DIR.resolve("openb_pod_list_default.csv");
    assumeTrue(Files.isReadable(nodes) && Files.isReadable(pods), "the Alibaba trace is not at " + DIR);

    List<PolicyReport> reports = PlacementBenchmark.run(Trace.read(nodes, pods), "fgd,vgpu", List.of(42L), 1.3, 2);

    double fgd = reports.get(0).seeds().get(0).unallocatedAt100();
    double vgpu = reports.get(1).seeds().get(0).unallocatedAt100();
    // The paper's ten FGD seeds span 4.62..4.94 (median 4.77); one of ours may sit 0.3 outside.
    assertThat(fgd).isBetween(4.32, 5.24);
    assertThat(vgpu).isLessThan(4.5).isLessThan(fgd);
  }
}
