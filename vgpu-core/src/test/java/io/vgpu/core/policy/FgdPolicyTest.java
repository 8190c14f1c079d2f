package io.vgpu.core.policy;

import static io.vgpu.core.policy.Cards.demand;
import static io.vgpu.core.policy.Cards.node;
import static io.vgpu.core.policy.Cards.order;
import static io.vgpu.core.policy.Cards.placement;
import static io.vgpu.core.policy.Cards.task;
import static io.vgpu.core.policy.Cards.workload;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class FgdPolicyTest {
  /** Half the tasks take half a card, half take a whole one; CPU does not matter. */
  private static final TargetWorkload HALF_AND_WHOLE = workload(List.of(task(0, 1, 500), task(0, 1, 1000)), 0.5, 0.5);

  @Test
  void scoreIsTheSigmoidOfTheDecreaseOnKubernetesIntegerScale() {
    assertThat(FgdPolicy.score(0)).isEqualTo(50);
    assertThat(FgdPolicy.score(-40)).isEqualTo(49);
    assertThat(FgdPolicy.score(-39)).isEqualTo(49);
    assertThat(FgdPolicy.score(2000)).isEqualTo(88);
  }

  @Test
  void triesFirstTheCardWhereTheShareLeastIncreasesFragmentation() {
    FgdPolicy fgd = new FgdPolicy(HALF_AND_WHOLE);
    // Before: the whole-card class can use only card 0, so 600 + 500 are lost to it: F = 550.
    // On card 2 (500 -> 0): F' = 0.5 * 600 = 300, score 56. On card 1 (600 -> 100): F' = 0.5 * 600 +
    // 0.5 * 100 = 350, score 54. On card 0 (1000 -> 500): no card fits a whole task, F' = 800, score 43.
    assertThat(order(fgd, node(1000, 600, 500), demand(1, 500))).containsExactly(2, 1, 0);
  }

  @Test
  void prefersTheNodeWhereTheShareFillsAHole() {
    FgdPolicy fgd = new FgdPolicy(HALF_AND_WHOLE);
    // A fresh card would lose a whole-card slot (F 0 -> 250, score 43); the half-used card closes
    // exactly (F 250 -> 0, score 56).
    assertThat(fgd.scoreNode(node(1000, 1000), placement(0, 500, 0))).isEqualTo(43);
    assertThat(fgd.scoreNode(node(500, 1000), placement(0, 500, 0))).isEqualTo(56);
  }

  @Test
  void differencesBelowOnePointTie() {
    FgdPolicy fgd = new FgdPolicy(workload(List.of(task(0, 1, 500), task(0, 1, 990)), 0.5, 0.5));
    // Leftovers of 990 and 980 are both fragments to nobody... but a 10-milli difference in what the
    // 990-class loses stays within one point of the integer score.
    double a = fgd.scoreNode(node(1000, 20), placement(0, 10, 1));
    double b = fgd.scoreNode(node(1000, 30), placement(0, 10, 1));
    assertThat(a).isEqualTo(b);
  }

  @Test
  void aCpuOnlyPodIsScoredByTheCpuItTakes() {
    FgdPolicy fgd = new FgdPolicy(workload(List.of(task(4000, 1, 1000)), 1.0));
    // Taking 2 of 5 vCPU leaves too little for the class: its 1000 idle milli become fragment.
    assertThat(fgd.scoreNode(node("n", "T", 5000, 1000), placement(2000, 0))).isEqualTo(FgdPolicy.score(-1000));
    assertThat(fgd.scoreNode(node("n", "T", 9000, 1000), placement(2000, 0))).isEqualTo(50);
  }

  @Test
  void learnsItsTargetWorkloadFromObservedDemands() {
    FgdPolicy fgd = new FgdPolicy();
    assertThat(fgd.workload().classes()).isEmpty();
    for (int i = 0; i < 30; i++) {
      fgd.observe(demand(1, 500));
    }
    fgd.observe(demand(2, 1000));

    // 95% of 31 observations is 29.45: the 30 half-card ones cover it.
    assertThat(fgd.workload().classes()).containsExactly(WorkloadClass.of(0, demand(1, 500)));
  }

  @Test
  void forgetsDemandsOlderThanItsWindow() {
    FgdPolicy fgd = new FgdPolicy();
    fgd.observe(demand(1, 300));
    for (int i = 0; i < WorkloadModel.WINDOW; i++) {
      fgd.observe(demand(1, 700));
    }
    assertThat(fgd.workload().classes()).containsExactly(WorkloadClass.of(0, demand(1, 700)));
  }
}
