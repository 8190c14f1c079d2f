package io.vgpu.core.policy;

import static io.vgpu.core.policy.Cards.demand;
import static io.vgpu.core.policy.Cards.node;
import static io.vgpu.core.policy.Cards.order;
import static io.vgpu.core.policy.Cards.placement;
import static io.vgpu.core.policy.Cards.task;
import static io.vgpu.core.policy.Cards.workload;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class VgpuPolicyTest {
  private static final TargetWorkload HALF_AND_WHOLE = workload(List.of(task(0, 1, 500), task(0, 1, 1000)), 0.5, 0.5);

  @Test
  void withoutCpuOrTypesItScoresTheUnquantizedFragmentationDecrease() {
    VgpuPolicy vgpu = new VgpuPolicy(HALF_AND_WHOLE);
    assertThat(vgpu.scoreNode(node(1000, 1000), placement(0, 500, 0))).isEqualTo(-250);
    assertThat(vgpu.scoreNode(node(500, 1000), placement(0, 500, 0))).isEqualTo(250);
    assertThat(order(vgpu, node(1000, 600, 500), demand(1, 500))).containsExactly(2, 1, 0);
  }

  @Test
  void tellsApartWhatFgdRoundsTogether() {
    VgpuPolicy vgpu = new VgpuPolicy(workload(List.of(task(0, 1, 500), task(0, 1, 990)), 0.5, 0.5));
    assertThat(vgpu.scoreNode(node(1000, 20), placement(0, 10, 1))).isEqualTo(10);
    assertThat(vgpu.scoreNode(node(1000, 20), placement(0, 10, 0))).isEqualTo(0);
  }

  @Test
  void amongEqualCardsTriesTheFullestFirst() {
    VgpuPolicy vgpu = new VgpuPolicy(workload(List.of(task(0, 1, 100)), 1.0));
    // A 100-milli task fits every leftover here, so fragmentation does not tell the cards apart.
    assertThat(order(vgpu, node(1000, 700, 400, 700), demand(1, 100))).containsExactly(2, 1, 3, 0);
  }

  @Test
  void keepsCpuHungryPodsOffCpuTightNodes() {
    // Tasks take a whole card and 10 vCPU: the cards need 10 millicores per milli.
    VgpuPolicy vgpu = new VgpuPolicy(workload(List.of(task(10_000, 1, 1000)), 1.0));
    // Two idle cards, 20 vCPU: exactly enough. A pod taking 10 vCPU and no card leaves 1000 idle
    // milli that 10 vCPU cannot feed... half of them stranded: 2000 - 10000 / 10 = 1000.
    double tight = vgpu.scoreNode(node("tight", "T", 20_000, 1000, 1000), placement(10_000, 0));
    double roomy = vgpu.scoreNode(node("roomy", "T", 60_000, 1000, 1000), placement(10_000, 0));
    assertThat(tight).isEqualTo(-1000);
    assertThat(roomy).isEqualTo(0);
  }

  @Test
  void sendsCpuLightPodsToNodesWhoseCardsWouldOtherwiseStarve() {
    VgpuPolicy vgpu = new VgpuPolicy(workload(List.of(task(10_000, 1, 1000)), 1.0));
    // 11 vCPU can feed 1100 of 2000 idle milli; a pod taking a card and 1 vCPU uses share that would
    // have starved: stranded 900 -> 0 (1000 idle, 10 vCPU feeding them), and a task still fits.
    double starving = vgpu.scoreNode(node("starving", "T", 11_000, 1000, 1000), placement(1000, 1000, 0));
    double roomy = vgpu.scoreNode(node("roomy", "T", 60_000, 1000, 1000), placement(1000, 1000, 0));
    assertThat(starving).isEqualTo(900);
    assertThat(roomy).isEqualTo(0);
  }

  @Test
  void avoidsCardTypesThatConstrainedTasksWillNeed() {
    WorkloadClass onlyT4 = new WorkloadClass(0, demand(1, 1000), List.of("T4"));
    WorkloadClass any = task(0, 1, 1000);
    Map<String, Long> cards = Map.of("T4", 100L, "A100", 100L);
    // Half the demand insists on T4, which is half the cards: T4 is fully contended.
    VgpuPolicy vgpu = new VgpuPolicy(workload(List.of(onlyT4, any), 0.5, 0.5), cards);
    double onT4 = vgpu.scoreNode(node("t", "T4", -1, 1000, 1000), placement(0, 1000, 0));
    double onA100 = vgpu.scoreNode(node("a", "A100", -1, 1000, 1000), placement(0, 1000, 0));
    // On A100 the T4-only class loses nothing it could use (+500 from its no-access idle share);
    // on T4 nothing changes for fragmentation, but the whole card is contended (-1000).
    assertThat(onA100).isEqualTo(500);
    assertThat(onT4).isEqualTo(-1000);
  }

  @Test
  void contentionSpreadsConstrainedDemandOverTheTypesItAccepts() {
    WorkloadClass t4OrV100 = new WorkloadClass(0, demand(1, 1000), List.of("T4", "V100"));
    WorkloadClass any = task(0, 1, 1000);
    TypeContention contention =
        TypeContention.of(workload(List.of(t4OrV100, any), 0.2, 0.8), Map.of("T4", 100L, "V100", 300L, "A100", 600L));
    // 20% of demand goes to T4 and V100 by capacity (1:3): 5% to T4 (10% of cards), 15% to V100 (30%).
    assertThat(contention.of("T4")).isCloseTo(0.5, within(1e-12));
    assertThat(contention.of("v100")).isCloseTo(0.5, within(1e-12));
    assertThat(contention.of("A100")).isZero();
  }

  @Test
  void learnsWithoutCpuOrTypesFromObservedDemands() {
    VgpuPolicy vgpu = new VgpuPolicy();
    vgpu.observe(demand(1, 500));
    // As the fixed half-card workload: a fresh card loses nothing to a half-card task.
    assertThat(vgpu.scoreNode(node(1000, 1000), placement(0, 500, 0))).isZero();
  }
}
