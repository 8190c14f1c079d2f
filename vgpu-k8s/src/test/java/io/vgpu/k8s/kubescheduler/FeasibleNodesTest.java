package io.vgpu.k8s.kubescheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** kube-scheduler's share of feasible nodes ({@code numFeasibleNodesToFind}) and where each cycle starts. */
class FeasibleNodesTest {
  private static List<String> nodes(int n) {
    return IntStream.range(0, n).mapToObj(i -> "n" + i).toList();
  }

  @Test
  void belowAHundredNodesEveryNodeIsLookedAtWhateverThePercentage() {
    assertThat(FeasibleNodes.numToFind(0, 99)).isEqualTo(99);
    assertThat(FeasibleNodes.numToFind(10, 99)).isEqualTo(99);
    assertThat(FeasibleNodes.numToFind(100, 5)).isEqualTo(5);
  }

  @Test
  void withoutAPercentageTheShareShrinksWithTheClusterToFivePercentButNeverBelowAHundredNodes() {
    // 50 - 1000/125 = 42 %
    assertThat(FeasibleNodes.numToFind(0, 1000)).isEqualTo(420);
    // 50 - 5000/125 = 10 %
    assertThat(FeasibleNodes.numToFind(0, 5000)).isEqualTo(500);
    // 50 - 10000/125 = -30: 5 %
    assertThat(FeasibleNodes.numToFind(0, 10000)).isEqualTo(500);
    // 42 % of 200 is 84: at least 100
    assertThat(FeasibleNodes.numToFind(0, 200)).isEqualTo(100);
    assertThat(FeasibleNodes.numToFind(100, 5000)).isEqualTo(5000);
    assertThat(FeasibleNodes.numToFind(30, 1000)).isEqualTo(300);
  }

  @Test
  void aCycleStopsAfterTheShareAndTheNextStartsWhereItStopped() {
    FeasibleNodes feasible = new FeasibleNodes();
    List<String> all = nodes(1000);
    Map<String, String> rejected = new LinkedHashMap<>();
    // every third node is infeasible; 10 % = 100 feasible nodes wanted, found among the first 150
    List<String> first = feasible.select(all, 10, n -> Integer.parseInt(n.substring(1)) % 3 == 2 ? "NodeSelectorMismatch" : null, rejected);
    assertThat(first).hasSize(100).startsWith("n0", "n1", "n3").endsWith("n148");
    assertThat(rejected).hasSize(49).containsEntry("n2", "NodeSelectorMismatch");
    List<String> second = feasible.select(all, 10, n -> null, new LinkedHashMap<>());
    assertThat(second).hasSize(100).startsWith("n149").endsWith("n248");
  }

  @Test
  void withAHundredPercentEveryFeasibleNodeInOrderEveryCycle() {
    FeasibleNodes feasible = new FeasibleNodes();
    List<String> all = nodes(300);
    for (int cycle = 0; cycle < 3; cycle++) {
      Map<String, String> rejected = new LinkedHashMap<>();
      List<String> chosen = feasible.select(all, 100, n -> n.equals("n7") ? "NodeUnschedulable" : null, rejected);
      assertThat(chosen).hasSize(299).startsWith("n0", "n1").doesNotContain("n7").endsWith("n299");
      assertThat(rejected).containsOnlyKeys("n7");
    }
  }

  @Test
  void aPercentageKubeSchedulerWouldRefuseIsRefused() {
    assertThatThrownBy(() -> FeasibleNodes.numToFind(101, 1000))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("percentageOfNodesToScore 101 is not from 0 to 100");
    assertThatThrownBy(() -> FeasibleNodes.numToFind(-1, 1000)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aCycleThatLooksAtEveryNodeWithoutFindingItsShareWrapsAroundOnce() {
    FeasibleNodes feasible = new FeasibleNodes();
    List<String> all = nodes(200);
    // Move the start to n150, then ask for 100 of 200 nodes with only 40 feasible: every node is looked at once.
    feasible.select(all, 75, n -> null, new LinkedHashMap<>());
    assertThat(feasible.select(all, 0, n -> Integer.parseInt(n.substring(1)) % 10 < 8 ? "NodeResourcesFit" : null, new LinkedHashMap<>()))
        .hasSize(40).startsWith("n158", "n159", "n168").endsWith("n148", "n149");
    // It looked at every node, so the next cycle starts where that one did.
    assertThat(feasible.select(all, 50, n -> null, new LinkedHashMap<>())).hasSize(100).startsWith("n150").endsWith("n49");
  }
}
