package io.vgpu.core.policy;

import static io.vgpu.core.policy.Cards.demand;
import static io.vgpu.core.policy.Cards.node;
import static io.vgpu.core.policy.Cards.order;
import static io.vgpu.core.policy.Cards.placement;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.spi.NodeView;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class RandomPolicyTest {
  private static final NodeView EIGHT_CARDS = node(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000);

  @Test
  void theSameSeedGivesTheSameDecisions() {
    RandomPolicy a = new RandomPolicy(7);
    RandomPolicy b = new RandomPolicy(7);
    assertThat(order(a, EIGHT_CARDS, demand(1, 100))).containsExactly(order(b, EIGHT_CARDS, demand(1, 100)));
    assertThat(a.scoreNode(EIGHT_CARDS, placement(0, 100, 0))).isEqualTo(b.scoreNode(EIGHT_CARDS, placement(0, 100, 0)));
  }

  @Test
  void ranksCardsAsAPermutation() {
    int[] order = order(new RandomPolicy(1), EIGHT_CARDS, demand(1, 100));
    int[] sorted = order.clone();
    Arrays.sort(sorted);
    assertThat(sorted).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
  }

  @Test
  void everyCardComesFirstAboutEquallyOften() {
    RandomPolicy random = new RandomPolicy(42);
    int[] first = new int[8];
    for (int i = 0; i < 8000; i++) {
      first[order(random, EIGHT_CARDS, demand(1, 100))[0]]++;
    }
    // Expected 1000 each; a fair shuffle stays well within 150 of it (about 5 standard deviations).
    for (int count : first) {
      assertThat(count).isBetween(850, 1150);
    }
  }

  @Test
  void scoresAreUniformInTheUnitInterval() {
    RandomPolicy random = new RandomPolicy(3);
    double sum = 0;
    for (int i = 0; i < 10_000; i++) {
      double s = random.scoreNode(EIGHT_CARDS, placement(0, 100, 0));
      assertThat(s).isGreaterThanOrEqualTo(0).isLessThan(1);
      sum += s;
    }
    assertThat(sum / 10_000).isBetween(0.48, 0.52);
  }
}
