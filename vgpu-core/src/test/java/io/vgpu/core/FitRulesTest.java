package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** HAMi's per-card checks, each producing its own reason word, in HAMi's order. */
class FitRulesTest {

  private static NodeRejection rejection(Engine engine, PodRequest request) {
    FilterResult result = engine.filter(engine.compile(request), null, true);
    assertThat(result.placement()).as("%s should not fit", request.pod()).isEmpty();
    assertThat(result.rejections()).hasSize(1);
    return result.rejections().get(0);
  }

  private static Engine oneCard(SchedulableDevice card) {
    Engine e = engine();
    e.upsertNode(NodeDevices.of("n1", List.of(card)));
    return e;
  }

  @Test
  void unhealthyCard() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960).withHealthy(false));
    NodeRejection r = rejection(e, pod("p", gpu(1, 1000, 10)));
    assertThat(r.kind()).isEqualTo(NodeRejection.Kind.DEVICES);
    assertThat(r.counts()).isEqualTo(Map.of(FitReason.CARD_NOT_HEALTH, 1));
    assertThat(r.cards()).isEqualTo(1);
  }

  @Test
  void cordonedCard() {
    Engine e = engine();
    e.upsertNode(new NodeDevices("n1", List.of(card(uuid(0, 0), 0, 40960)), Set.of(uuid(0, 0))));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 10))).counts()).isEqualTo(Map.of(FitReason.CARD_CORDONED, 1));
  }

  @Test
  void healthIsCheckedBeforeCordon() {
    Engine e = engine();
    e.upsertNode(new NodeDevices("n1", List.of(card(uuid(0, 0), 0, 40960).withHealthy(false)), Set.of(uuid(0, 0))));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 10))).counts()).isEqualTo(Map.of(FitReason.CARD_NOT_HEALTH, 1));
  }

  @Test
  void typeMismatchByUseAndAvoidLists() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    PodRequest useT4 = pod("p", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withTypes(List.of("T4"), List.of()));
    assertThat(rejection(e, useT4).counts()).isEqualTo(Map.of(FitReason.CARD_TYPE_MISMATCH, 1));
    PodRequest avoidA100 = pod("q", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withTypes(List.of(), List.of("a100")));
    assertThat(rejection(e, avoidA100).counts()).isEqualTo(Map.of(FitReason.CARD_TYPE_MISMATCH, 1));
    PodRequest useA100 = pod("r", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withTypes(List.of(" v100", "a100 "), List.of()));
    assertThat(e.filter(e.compile(useA100), null, false).placement()).isPresent();
  }

  @Test
  void sharingModeMustBeASubstringOfTheRequestedMode() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    PodRequest mig = pod("p", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withSharingMode("mig"));
    assertThat(rejection(e, mig).counts()).isEqualTo(Map.of(FitReason.CARD_TYPE_MISMATCH, 1));
    PodRequest hamiCore = pod("q", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withSharingMode("hami-core"));
    assertThat(e.filter(e.compile(hamiCore), null, false).placement()).isPresent();
  }

  @Test
  void uuidMismatchByUseAndAvoidLists() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    PodRequest use = pod("p", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 1)), List.of()));
    assertThat(uuids(place(e, use))).containsExactly(uuid(0, 1));
    PodRequest avoidBoth = pod("q", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(), List.of(uuid(0, 0), uuid(0, 1))));
    assertThat(rejection(e, avoidBoth).counts()).isEqualTo(Map.of(FitReason.CARD_UUID_MISMATCH, 2));
  }

  @Test
  void allSharingSlotsTaken() {
    Engine e = oneCard(new SchedulableDevice(uuid(0, 0), 0, A100, 40960, 100, 1, 0, true, "hami-core"));
    place(e, pod("first", gpu(1, 1000, 10)));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 10))).counts()).isEqualTo(Map.of(FitReason.CARD_TIME_SLICING_EXHAUSTED, 1));
  }

  @Test
  void insufficientMemory() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("first", gpu(1, 30000, 10)));
    assertThat(rejection(e, pod("p", gpu(1, 12000, 10))).counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1));
  }

  @Test
  void memoryIsCheckedBeforeCores() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("first", gpu(1, 30000, 60)));
    assertThat(rejection(e, pod("p", gpu(1, 12000, 50))).counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1));
  }

  @Test
  void insufficientCores() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("first", gpu(1, 1000, 60)));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 50))).counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_CORE, 1));
  }

  @Test
  void hundredCoresNeedAnEmptyCard() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("small", gpu(1, 64, 0)));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 100))).counts())
        .isEqualTo(Map.of(FitReason.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT, 1));
  }

  @Test
  void exclusiveRuleAppliesOnlyWhenCoresAreUnscaled() {
    Engine e = oneCard(new SchedulableDevice(uuid(0, 0), 0, A100, 40960, 200, 10, 0, true, "hami-core"));
    place(e, pod("small", gpu(1, 64, 0)));
    assertThat(e.filter(e.compile(pod("p", gpu(1, 1000, 100))), null, false).placement()).isPresent();
  }

  @Test
  void aWholeCardPodBlocksASmallOne() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("whole", new ContainerRequest("c", 1, ContainerRequest.UNSET, 100, 100)));
    assertThat(rejection(e, pod("p", gpu(1, 64, 1))).counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1));
  }

  @Test
  void zeroCorePodMayNotJoinACardWhoseComputeIsFullyAllocated() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    place(e, pod("a", gpu(1, 1000, 50)));
    place(e, pod("b", gpu(1, 1000, 50)));
    assertThat(rejection(e, pod("p", gpu(1, 1000, 0))).counts()).isEqualTo(Map.of(FitReason.CARD_COMPUTE_UNITS_EXHAUSTED, 1));
  }

  @Test
  void partialSelectionIsReportedWithTheFailedCards() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    place(e, pod("big", gpu(1, 40000, 0)).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 0)), List.of())));
    NodeRejection r = rejection(e, pod("p", gpu(2, 2000, 0)));
    assertThat(r.counts())
        .isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1, FitReason.ALLOCATED_CARDS_INSUFFICIENT_REQUEST, 1));
    assertThat(r.cards()).isEqualTo(2);
  }

  @Test
  void moreCardsThanTheNodeHasIsABareNodeReason() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    NodeRejection r = rejection(e, pod("p", gpu(3, 1000, 0)));
    assertThat(r.kind()).isEqualTo(NodeRejection.Kind.INSUFFICIENT_DEVICES);
    assertThat(r.counts()).isEmpty();
  }

  @Test
  void gpuCountGivesDistinctCards() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 4));
    assertThat(uuids(place(e, pod("p", gpu(2, 1000, 10))))).doesNotHaveDuplicates().hasSize(2);
  }

  @Test
  void numaBindKeepsACardSetOnOneNumaNode() {
    Engine e = engine();
    e.upsertNode(NodeDevices.of("n1", List.of(
        new SchedulableDevice(uuid(0, 0), 0, A100, 40960, 100, 10, 0, true, "hami-core"),
        new SchedulableDevice(uuid(0, 1), 1, A100, 40960, 100, 10, 1, true, "hami-core"))));
    PodRequest bound = pod("p", gpu(2, 1000, 0)).withConstraints(DeviceConstraints.NONE.withNumaBind(true));
    NodeRejection r = rejection(e, bound);
    // The walk picks a card on NUMA 1, meets NUMA 0, counts the abandoned pick, and ends one card short.
    assertThat(r.counts()).isEqualTo(Map.of(FitReason.NUMA_NOT_FIT, 1, FitReason.ALLOCATED_CARDS_INSUFFICIENT_REQUEST, 1));
    assertThat(e.filter(e.compile(pod("q", gpu(2, 1000, 0))), null, false).placement()).isPresent();
  }

  @Test
  void numaBindSucceedsWithinOneNumaNode() {
    Engine e = engine();
    e.upsertNode(NodeDevices.of("n1", List.of(
        new SchedulableDevice(uuid(0, 0), 0, A100, 40960, 100, 10, 0, true, "hami-core"),
        new SchedulableDevice(uuid(0, 1), 1, A100, 40960, 100, 10, 1, true, "hami-core"),
        new SchedulableDevice(uuid(0, 2), 2, A100, 40960, 100, 10, 1, true, "hami-core"))));
    PodRequest bound = pod("p", gpu(2, 1000, 0)).withConstraints(DeviceConstraints.NONE.withNumaBind(true));
    assertThat(uuids(place(e, bound))).containsExactlyInAnyOrder(uuid(0, 1), uuid(0, 2));
  }

  @Test
  void eachNodeOfOneScanGetsItsOwnReasonsWhenTheyAlternate() {
    Engine e = engine();
    e.upsertNode(NodeDevices.of("healthy-small", List.of(card(uuid(0, 0), 0, 1024))));
    e.upsertNode(NodeDevices.of("unhealthy", List.of(card(uuid(1, 0), 0, 40960).withHealthy(false))));
    e.upsertNode(NodeDevices.of("small-again", List.of(card(uuid(2, 0), 0, 1024))));
    e.upsertNode(NodeDevices.of("two-small", List.of(card(uuid(3, 0), 0, 1024), card(uuid(3, 1), 1, 2048))));
    FilterResult r = e.filter(e.compile(pod("p", gpu(1, 4096, 10))), List.of("healthy-small", "unhealthy", "small-again", "two-small"), true);

    assertThat(r.placement()).isEmpty();
    assertThat(r.rejections()).containsExactly(
        new NodeRejection("healthy-small", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1), 1),
        new NodeRejection("unhealthy", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_NOT_HEALTH, 1), 1),
        new NodeRejection("small-again", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1), 1),
        new NodeRejection("two-small", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 2), 2));
  }

  @Test
  void unknownCandidateIsUnregistered() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    FilterResult r = e.filter(e.compile(pod("p", gpu(1, 1000, 0))), List.of("ghost", "n1"), true);
    assertThat(r.placement()).isPresent();
    assertThat(r.rejections()).containsExactly(new NodeRejection("ghost", NodeRejection.Kind.UNREGISTERED, Map.of(), 0));
  }

  @Test
  void firstFailingContainerExplainsTheNode() {
    Engine e = oneCard(card(uuid(0, 0), 0, 40960));
    NodeRejection r = rejection(e, pod("p", gpu(1, 1000, 0), gpu(1, 40000, 0)));
    assertThat(r.counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 1));
  }
}
