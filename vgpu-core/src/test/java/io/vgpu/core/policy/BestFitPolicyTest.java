package io.vgpu.core.policy;

import static io.vgpu.core.policy.Cards.demand;
import static io.vgpu.core.policy.Cards.node;
import static io.vgpu.core.policy.Cards.order;
import static io.vgpu.core.policy.Cards.placement;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BestFitPolicyTest {
  private final BestFitPolicy bestFit = new BestFitPolicy();

  @Test
  void triesTheFullestCardsFirstAndLowerPositionsAmongEquals() {
    assertThat(order(bestFit, node(1000, 300, 600, 300), demand(1, 200))).containsExactly(1, 3, 2, 0);
  }

  @Test
  void scoresTheLeftoverOfCpuAndCardsAgainstThePapersNodeSize() {
    // 64 vCPU and 2000 milli free; the pod takes 8 vCPU and 500 milli:
    // leftover = 0.5 * 56000 / 128000 + 0.5 * 1500 / 8000 = 0.3125, score floor(68.75).
    assertThat(bestFit.scoreNode(node("n", "T", 64_000, 1000, 1000), placement(8000, 500, 0))).isEqualTo(68);
  }

  @Test
  void usesCardsAloneWhereCpuIsNotModelled() {
    // leftover = 1500 / 8000, score floor(81.25).
    assertThat(bestFit.scoreNode(node(1000, 1000), placement(0, 500, 0))).isEqualTo(81);
  }

  @Test
  void prefersTheNodeWithLessLeftOver() {
    double full = bestFit.scoreNode(node(500, 0), placement(0, 500, 0));
    double empty = bestFit.scoreNode(node(1000, 1000), placement(0, 500, 0));
    assertThat(full).isGreaterThan(empty);
  }
}
