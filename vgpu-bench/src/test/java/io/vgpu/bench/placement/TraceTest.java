package io.vgpu.bench.placement;

import static io.vgpu.bench.placement.TraceFiles.NODE_HEADER;
import static io.vgpu.bench.placement.TraceFiles.POD_HEADER;
import static io.vgpu.bench.placement.TraceFiles.SHORT_POD_HEADER;
import static io.vgpu.bench.placement.TraceFiles.pod;
import static io.vgpu.bench.placement.TraceFiles.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TraceTest {
  @TempDir Path dir;

  private Path nodes() {
    return write(dir, "nodes.csv", NODE_HEADER, "n1,64000,262144,2,P100", "n2,96000,393216,8,G2");
  }

  @Test
  void readsBothPodLayoutsAndNormalizesGpuFields() {
    Path full = write(dir, "full.csv", POD_HEADER, pod("p1", 6000, 12288, 1, 460, ""), pod("p2", 4000, 1024, 2, 1000, "V100M16|V100M32"));
    Path short5 = write(dir, "short.csv", SHORT_POD_HEADER, "p1,6000,12288,1,460", "p3,1000,512,0,0", "p4,1000,512,1,1500");

    Trace a = Trace.read(nodes(), full);
    Trace b = Trace.read(nodes(), short5);

    assertThat(a.name()).isEqualTo("full");
    assertThat(a.totalGpus()).isEqualTo(10);
    assertThat(a.pods().get(1)).isEqualTo(new TracePod("p2", 4000, 1024, 2, 1000, List.of("V100M16", "V100M32")));
    assertThat(b.pods()).containsExactly(
        new TracePod("p1", 6000, 12288, 1, 460, List.of()),
        new TracePod("p3", 1000, 512, 0, 0, List.of()),
        new TracePod("p4", 1000, 512, 1, 1000, List.of()));
  }

  @Test
  void aPodWithoutShareOrGpusIsCpuOnly() {
    assertThat(new TracePod("p", 1, 1, 2, 0, List.of()).gpus()).isZero();
    assertThat(new TracePod("p", 1, 1, 0, 500, List.of()).gpuMilli()).isZero();
  }

  @Test
  void namesFileLineColumnAndValueOfABadField() {
    Path pods = write(dir, "pods.csv", POD_HEADER, pod("p1", 6000, 12288, 1, 460, ""), "p2,6000,lots,1,460,,LS,Running,0,1,0");
    assertThatThrownBy(() -> Trace.read(nodes(), pods))
        .isInstanceOf(BenchInputException.class)
        .hasMessage(pods + ":3: column 'memory_mib' value 'lots' is not a non-negative whole number");
  }

  @Test
  void namesAMissingColumn() {
    Path pods = write(dir, "pods.csv", "name,cpu_milli,memory_mib,num_gpu", "p1,1,1,0");
    assertThatThrownBy(() -> Trace.read(nodes(), pods))
        .hasMessage(pods + ":1: pods file lacks column gpu_milli (header is 'name,cpu_milli,memory_mib,num_gpu')");
  }

  @Test
  void namesARowWithTheWrongNumberOfFields() {
    Path nodes = write(dir, "nodes.csv", NODE_HEADER, "n1,64000,262144,2");
    assertThatThrownBy(() -> Trace.readNodes(nodes)).hasMessage(nodes + ":2: 4 fields, but the header has 5");
  }

  @Test
  void namesAMissingFile() {
    Path missing = dir.resolve("nope.csv");
    assertThatThrownBy(() -> Trace.read(missing, missing)).hasMessage("nodes file '" + missing + "' does not exist");
  }

  @Test
  void rejectsANodeListWithoutGpusAndAnEmptyPodList() {
    Path cpuOnly = write(dir, "cpu.csv", NODE_HEADER, "n1,64000,262144,0,");
    assertThatThrownBy(() -> Trace.readNodes(cpuOnly)).hasMessageContaining("nodes file has no GPU");
    Path empty = write(dir, "empty.csv", SHORT_POD_HEADER);
    assertThatThrownBy(() -> Trace.readPods(empty)).hasMessage(empty + ": pods file has no pod");
  }

  @Test
  void rejectsADuplicateNode() {
    Path nodes = write(dir, "nodes.csv", NODE_HEADER, "n1,1,1,1,T4", "n1,1,1,1,T4");
    assertThatThrownBy(() -> Trace.readNodes(nodes)).hasMessage(nodes + ":3: column 'sn' value 'n1' names a node a second time");
  }
}
