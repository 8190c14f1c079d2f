package io.vgpu.core.policy;

import static io.vgpu.core.policy.Cards.node;
import static io.vgpu.core.policy.Cards.task;
import static io.vgpu.core.policy.Cards.workload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TargetWorkloadTest {
  private static final WorkloadClass WHOLE = task(4000, 1, 1000);
  private static final WorkloadClass HALF = task(2000, 1, 500);
  private static final WorkloadClass CPU = WorkloadClass.cpuOnly(1000);

  @Test
  void typicalKeepsTheMostPopularClassesUntilTheyCoverTheThreshold() {
    Map<WorkloadClass, Integer> counts = new LinkedHashMap<>();
    counts.put(CPU, 1);
    counts.put(HALF, 3);
    counts.put(WHOLE, 5);
    counts.put(task(1000, 2, 1000), 1);

    // 80% of 10 tasks is 8: WHOLE (5) then HALF (3) reach it.
    TargetWorkload w = TargetWorkload.typical(counts, 80);

    assertThat(w.classes()).containsExactly(WHOLE, HALF);
    assertThat(w.weight(0)).isCloseTo(5.0 / 8, within(1e-12));
    assertThat(w.weight(1)).isCloseTo(3.0 / 8, within(1e-12));
  }

  @Test
  void typicalBreaksCountTiesByTheLargerClassFirst() {
    Map<WorkloadClass, Integer> counts = new LinkedHashMap<>();
    counts.put(task(1000, 1, 500), 2);
    counts.put(task(3000, 1, 500), 2);
    counts.put(task(2000, 1, 500), 2);

    TargetWorkload w = TargetWorkload.typical(counts, 50);

    // 50% of 6 is 3: two classes are needed, the two with the most CPU.
    assertThat(w.classes()).containsExactly(task(3000, 1, 500), task(2000, 1, 500));
  }

  @Test
  void rejectsBadWeightsAndThresholds() {
    assertThatThrownBy(() -> TargetWorkload.of(List.of(WHOLE), List.of(-1.0)))
        .hasMessageContaining("-1.0");
    assertThatThrownBy(() -> TargetWorkload.of(List.of(WHOLE), List.of()))
        .hasMessageContaining("1 workload classes but 0 weights");
    assertThatThrownBy(() -> TargetWorkload.typical(Map.of(WHOLE, 1), 0)).hasMessageContaining("popularity");
  }

  @Test
  void fragmentationCountsWhatEachClassCouldNotUse() {
    TargetWorkload w = workload(List.of(WHOLE, HALF, CPU), 0.5, 0.3, 0.2);
    // Cards with 1000 and 300 free, 10 vCPU free. WHOLE fits on card 0, so card 1's 300 is lost to it;
    // HALF likewise; a CPU-only task can use no card, so all 1300 are lost to it.
    assertThat(w.fragmentationOf(node("n", "T", 10_000, 1000, 300)))
        .isCloseTo(0.5 * 300 + 0.3 * 300 + 0.2 * 1300, within(1e-9));
  }

  @Test
  void aClassShortOfCpuLosesTheWholeNode() {
    TargetWorkload w = workload(List.of(WHOLE, HALF, CPU), 0.5, 0.3, 0.2);
    // 3 vCPU free: WHOLE needs 4, so it cannot run here at all.
    assertThat(w.fragmentationOf(node("n", "T", 3_000, 1000, 300)))
        .isCloseTo(0.5 * 1300 + 0.3 * 300 + 0.2 * 1300, within(1e-9));
  }

  @Test
  void aClassThatRejectsTheCardTypeLosesTheWholeNode() {
    WorkloadClass onlyT4 = new WorkloadClass(0, Cards.demand(1, 500), List.of("T4"));
    TargetWorkload w = workload(List.of(onlyT4), 1.0);
    assertThat(w.fragmentationOf(node("a", "A100", -1, 1000, 300))).isEqualTo(1300);
    assertThat(w.fragmentationOf(node("t", "t4", -1, 1000, 300))).isEqualTo(300);
  }

  @Test
  void aMultiCardClassNeedsEnoughCardsWithRoom() {
    TargetWorkload w = workload(List.of(task(0, 2, 1000)), 1.0);
    assertThat(w.fragmentationOf(node(1000, 1000, 400))).isEqualTo(400);
    assertThat(w.fragmentationOf(node(1000, 900, 400))).isEqualTo(2300);
  }

  @Test
  void cpuPerCardShareAveragesOverCardUsingClasses() {
    TargetWorkload w = workload(List.of(WHOLE, HALF, CPU), 0.5, 0.3, 0.2);
    // (0.5 * 4000 + 0.3 * 2000) / (0.5 * 1000 + 0.3 * 500)
    assertThat(w.cpuPerCardShare()).isCloseTo(2600.0 / 650, within(1e-12));
  }
}
