package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TraceVariantsTest {
  private final Trace trace = SyntheticTrace.sharingHeavy();

  private static long count(List<TracePod> pods, java.util.function.Predicate<TracePod> kind) {
    return pods.stream().filter(kind).count();
  }

  @Test
  void workloadVariantsChangeWhatTheyPromiseAndAreSeeded() {
    Map<String, List<TracePod>> variants = TraceVariants.podVariants(trace, 42);
    List<TracePod> pods = trace.pods();

    assertThat(count(variants.get("share70"), p -> p.gpus() == 1 && p.gpuMilli() < 1000))
        .isGreaterThan(count(pods, p -> p.gpus() == 1 && p.gpuMilli() < 1000));
    assertThat(count(variants.get("multi25"), p -> p.gpus() > 1)).isGreaterThan(count(pods, p -> p.gpus() > 1));
    assertThat(variants.get("spec30").stream().flatMap(p -> p.gpuSpec().stream()).toList())
        .isNotEmpty()
        .allMatch(Set.of("G2", "T4")::contains);
    List<TracePod> cpu = variants.get("cpu30");
    assertThat((double) count(cpu, p -> p.gpus() == 0) / cpu.size()).isGreaterThanOrEqualTo(0.3);
    assertThat(TraceVariants.podVariants(trace, 42)).isEqualTo(variants);
    assertThat(TraceVariants.podVariants(trace, 43).get("share70")).isNotEqualTo(variants.get("share70"));
  }

  @Test
  void clusterVariantsKeepTheGpusAndChangeTheNodes() {
    Map<String, List<TraceNode>> variants = TraceVariants.nodeVariants(trace);
    long gpus = trace.totalGpus();
    List<TraceNode> halves = variants.get("half-nodes");
    assertThat(halves.stream().mapToLong(TraceNode::gpus).sum()).isEqualTo(gpus);
    assertThat(halves).hasSize(60).allMatch(n -> n.gpus() <= 4);
    assertThat(variants.get("lean-cpu").get(0).cpuMilli()).isEqualTo(72_000);
  }
}
