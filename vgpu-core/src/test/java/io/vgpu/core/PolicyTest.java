package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.CardDemand;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** HAMi's node and card policies, their formulas, defaults and per-pod overrides. */
class PolicyTest {

  private static PodRequest with(PodRequest p, String node, String device) {
    return p.withOverrides(new PolicyOverrides(node, device, ScoringWeights.DEFAULT));
  }

  private static SchedulableDevice numaCard(int index, int numa) {
    return new SchedulableDevice(uuid(0, index), index, A100, 40960, 100, 10, numa, true, "hami-core");
  }

  @Test
  void nodeScoreIsHamisFormula() {
    // HAMi's Test_calcScore: used 5/10 slots, 50/100 cores, 4000/8000 MiB -> 10 x 1.5 = 15.
    NodeState state = NodeState.of(NodeDevices.of("n", List.of(new SchedulableDevice("GPU-a", 0, A100, 8000, 100, 10, 0, true, "hami-core"))));
    for (int pod = 0; pod < 5; pod++) {
      state = state.plus(PodUsage.of(new PodGrant(new PodRef("default", "p" + pod), "n", List.of(),
          List.of(new ContainerGrant("c", List.of(new DeviceGrant("GPU-a", "NVIDIA", 800, 10)))))));
    }
    assertThat(state.usageScore).isEqualTo(15f);
    assertThat(HamiPolicy.usageScore(state)).isEqualTo(15f);
  }

  @Test
  void defaultsAreNodeBinpackAndCardSpread() {
    assertThat(EngineConfig.DEFAULT.nodePolicy()).isEqualTo("binpack");
    assertThat(EngineConfig.DEFAULT.devicePolicy()).isEqualTo("spread");
  }

  @Test
  void cardSpreadTakesTheLeastUsedCardAndBinpackTheMostUsed() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    place(e, pod("first", gpu(1, 1000, 10)));
    assertThat(uuids(place(e, pod("spread", gpu(1, 1000, 10))))).containsExactly(uuid(0, 1));
    place(e, pod("third", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 1)), List.of())));
    // card 1 now holds two pods, card 0 one: binpack goes to the fuller card.
    assertThat(uuids(place(e, with(pod("binpack", gpu(1, 1000, 10)), "", "binpack")))).containsExactly(uuid(0, 1));
  }

  @Test
  void cardTiesGoToTheLowestIndex() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 4));
    assertThat(uuids(place(e, pod("p", gpu(1, 1000, 10))))).containsExactly(uuid(0, 0));
    assertThat(uuids(place(e, pod("q", gpu(2, 1000, 10))))).containsExactly(uuid(0, 1), uuid(0, 2));
  }

  @Test
  void equalScoresPreferTheHigherNumaNodeAsHamiDoes() {
    Engine e = engine();
    e.upsertNode(NodeDevices.of("n1", List.of(numaCard(0, 0), numaCard(1, 1))));
    assertThat(uuids(place(e, pod("p", gpu(1, 1000, 10))))).containsExactly(uuid(0, 1));
  }

  @Test
  void numaBindGroupsCardsByNuma() {
    NodeState node = NodeState.of(NodeDevices.of("n1", List.of(numaCard(0, 0), numaCard(1, 1), numaCard(2, 0), numaCard(3, 1))));
    int[] order = new int[4];
    new HamiPolicy("binpack", "spread", ScoringWeights.DEFAULT, true).rankCards(node, new CardDemand(1, 1, 0, 0), order);
    // HAMi sorts spread+numa-bind by NUMA ascending and walks from the end: NUMA 1 cards first.
    assertThat(order).containsExactly(1, 3, 0, 2);
  }

  @Test
  void scoringWeightsChangeTheCardOrder() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    // card 0: one pod with lots of memory; card 1: two pods with little memory.
    place(e, pod("big", gpu(1, 30000, 0)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 0)), List.of())));
    place(e, pod("s1", gpu(1, 100, 0)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 1)), List.of())));
    place(e, pod("s2", gpu(1, 100, 0)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 1)), List.of())));
    PodRequest memoryOnly = pod("m", gpu(1, 100, 0)).withOverrides(new PolicyOverrides("", "binpack", new ScoringWeights(0, 0, 1)));
    PodRequest slotsOnly = pod("s", gpu(1, 100, 0)).withOverrides(new PolicyOverrides("", "binpack", new ScoringWeights(1, 0, 0)));
    assertThat(uuids(e.filter(e.compile(memoryOnly), null, false).placement().orElseThrow().grant())).containsExactly(uuid(0, 0));
    assertThat(uuids(e.filter(e.compile(slotsOnly), null, false).placement().orElseThrow().grant())).containsExactly(uuid(0, 1));
  }

  @Test
  void mutexRefusesBusyCardsAndPicksIdleOnes() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    place(e, pod("first", gpu(1, 1000, 10)));
    assertThat(uuids(place(e, with(pod("m", gpu(1, 1000, 10)), "", "mutex")))).containsExactly(uuid(0, 1));
    FilterResult full = e.filter(e.compile(with(pod("n", gpu(1, 1000, 10)), "", "mutex")), null, true);
    assertThat(full.rejections().get(0).counts()).isEqualTo(Map.of(FitReason.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT, 2));
  }

  @Test
  void chainSortsByEachKeyInTurnThenByHamisIndexOrder() {
    NodeState node = NodeState.of(NodeDevices.of("n1", List.of(numaCard(0, 0), numaCard(1, 1), numaCard(2, 0), numaCard(3, 1))));
    int[] order = new int[4];
    new HamiPolicy("binpack", "binpack,numa", ScoringWeights.DEFAULT, false).rankCards(node, new CardDemand(1, 1, 0, 0), order);
    // All scores tie; numa ascending then index ascending, walked from the end.
    assertThat(order).containsExactly(3, 1, 2, 0);
  }

  @Test
  void nodeBinpackPrefersTheBusierNodeAndSpreadTheIdler() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    e.upsertNode(node("n2", 1, 2));
    assertThat(place(e, pod("first", gpu(1, 1000, 10))).node()).isEqualTo("n1");
    assertThat(place(e, pod("binpack", gpu(1, 1000, 10))).node()).isEqualTo("n1");
    assertThat(place(e, with(pod("spread", gpu(1, 1000, 10)), "spread", "")).node()).isEqualTo("n2");
  }

  @Test
  void nodeTiesGoToTheFirstCandidate() {
    Engine e = engine("spread", "spread");
    e.upsertNode(node("n1", 0, 1));
    e.upsertNode(node("n2", 1, 1));
    FilterResult r = e.filter(e.compile(pod("p", gpu(1, 1000, 10))), List.of("n2", "n1"), false);
    assertThat(r.placement().orElseThrow().node()).isEqualTo("n2");
  }

  @Test
  void engineDefaultsComeFromConfigAndPodOverridesWin() {
    Engine e = engine("spread", "binpack");
    e.upsertNode(node("n1", 0, 2));
    e.upsertNode(node("n2", 1, 2));
    place(e, pod("first", gpu(1, 1000, 10)));
    // config: spread nodes -> n2
    assertThat(place(e, pod("second", gpu(1, 1000, 10))).node()).isEqualTo("n2");
    // pod override: binpack nodes -> the busier n1 or n2 (both 1 pod) -> first candidate n1; card binpack -> card 0
    var third = place(e, with(pod("third", gpu(1, 1000, 10)), "binpack", ""));
    assertThat(third.node()).isEqualTo("n1");
    assertThat(uuids(third)).containsExactly(uuid(0, 0));
  }
}
