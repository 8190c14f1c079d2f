package io.vgpu.examples;

import static io.vgpu.examples.ScenarioRunner.device;
import static io.vgpu.examples.ScenarioRunner.hasPod;
import static io.vgpu.examples.ScenarioRunner.pod;
import static io.vgpu.examples.ScenarioRunner.simulate;
import static io.vgpu.examples.ScenarioRunner.simulateFirst;
import static io.vgpu.examples.ScenarioRunner.uuids;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * One test per scheduling check of the mock-GPU lab (HAMi v2.10.0 on two workers with two
 * A100-SXM4-40GB each) that vgpu reproduces, each replaying its file of {@code examples/scenarios}
 * through {@code vgpu simulate --output json}.
 */
class LabScenariosTest {
  private static final String CARD0 = "GPU-12345678-1234-1234-1234-123456780000";
  private static final String CARD1 = "GPU-12345678-1234-1234-1234-123456780001";
  private static final String W2_CARD0 = "GPU-22345678-1234-1234-1234-123456780000";
  private static final String W2_CARD1 = "GPU-22345678-1234-1234-1234-123456780001";
  private static final String WORKER = "hami-test-worker";
  private static final String WORKER2 = "hami-test-worker2";

  @TempDir Path temp;

  private static String allocated(JsonNode pod) {
    return pod.get("annotations").get("hami.io/vgpu-devices-allocated").stringValue();
  }

  private static Map<String, String> reasons(JsonNode pod) {
    return Map.of(WORKER, pod.get("reasons").get(WORKER).stringValue(), WORKER2, pod.get("reasons").get(WORKER2).stringValue());
  }

  private static String phase(JsonNode pod) {
    return pod.get("phase").stringValue();
  }

  @Test
  void threePodsPinnedToOneCardShareItsUuid() {
    JsonNode r = simulate("share-one-card.yaml");
    for (String name : new String[] {"share-1", "share-2", "share-3"}) {
      JsonNode p = pod(r, "hami-tests/" + name);
      assertThat(phase(p)).isEqualTo("Running");
      assertThat(p.get("node").stringValue()).isEqualTo(WORKER);
      assertThat(allocated(p)).isEqualTo(CARD0 + ",NVIDIA,4096,25:;");
    }
    JsonNode card = device(r, CARD0);
    assertThat(card.get("usedMemoryMiB").intValue()).isEqualTo(12288);
    assertThat(card.get("usedCores").intValue()).isEqualTo(75);
    assertThat(card.get("sharers").intValue()).isEqualTo(3);
  }

  @Test
  void tenSmallSharersRunTheEleventhWaitsAndRunsAfterADelete() {
    JsonNode before = simulateFirst("split-count.yaml", 11, temp);
    for (int i = 1; i <= 10; i++) {
      assertThat(phase(pod(before, "hami-tests/small-" + i))).isEqualTo("Running");
    }
    JsonNode eleventh = pod(before, "hami-tests/small-11");
    assertThat(phase(eleventh)).isEqualTo("Pending");
    assertThat(reasons(eleventh))
        .containsEntry(WORKER, "1/2 CardTimeSlicingExhausted, 1/2 CardUuidMismatch")
        .containsEntry(WORKER2, "NodeSelectorMismatch");
    JsonNode card = device(before, CARD0);
    assertThat(card.get("sharers").intValue()).isEqualTo(10);
    assertThat(card.get("usedMemoryMiB").intValue()).as("memory is left").isEqualTo(640);
    assertThat(card.get("usedCores").intValue()).as("cores are left").isEqualTo(10);

    JsonNode after = simulate("split-count.yaml");
    assertThat(phase(pod(after, "hami-tests/small-11"))).isEqualTo("Running");
    assertThat(hasPod(after, "hami-tests/small-1")).isFalse();
    JsonNode deleteStep = after.get("timeline").get(11);
    assertThat(deleteStep.get("event").stringValue()).isEqualTo("delete hami-tests/small-1");
    assertThat(deleteStep.get("scheduled").toString()).isEqualTo("[\"hami-tests/small-11\"]");
  }

  @Test
  void memoryBeyondTheCardWaitsUntilTheFirstPodIsDeleted() {
    JsonNode before = simulateFirst("memory-budget.yaml", 2, temp);
    assertThat(phase(pod(before, "hami-tests/mem-30000"))).isEqualTo("Running");
    JsonNode second = pod(before, "hami-tests/mem-12000");
    assertThat(phase(second)).isEqualTo("Pending");
    assertThat(reasons(second)).containsEntry(WORKER, "1/2 CardInsufficientMemory, 1/2 CardUuidMismatch");

    JsonNode after = simulate("memory-budget.yaml");
    assertThat(allocated(pod(after, "hami-tests/mem-12000"))).isEqualTo(CARD0 + ",NVIDIA,12000,0:;");
    assertThat(after.get("timeline").get(2).get("scheduled").toString()).isEqualTo("[\"hami-tests/mem-12000\"]");
  }

  @Test
  void coresBeyondTheCardWaitUntilTheFirstPodIsDeleted() {
    JsonNode before = simulateFirst("core-budget.yaml", 2, temp);
    JsonNode second = pod(before, "hami-tests/cores-50");
    assertThat(phase(second)).isEqualTo("Pending");
    assertThat(reasons(second)).containsEntry(WORKER, "1/2 CardInsufficientCore, 1/2 CardUuidMismatch");

    JsonNode after = simulate("core-budget.yaml");
    assertThat(allocated(pod(after, "hami-tests/cores-50"))).isEqualTo(CARD0 + ",NVIDIA,1024,50:;");
    assertThat(after.get("timeline").get(2).get("scheduled").toString()).isEqualTo("[\"hami-tests/cores-50\"]");
  }

  @Test
  void aWholeCardBlocksEvenASmallPod() {
    JsonNode r = simulate("exclusive-card.yaml");
    assertThat(allocated(pod(r, "hami-tests/whole"))).isEqualTo(CARD0 + ",NVIDIA,40960,100:;");
    JsonNode small = pod(r, "hami-tests/small");
    assertThat(phase(small)).isEqualTo("Pending");
    assertThat(reasons(small)).containsEntry(WORKER, "1/2 CardInsufficientMemory, 1/2 CardUuidMismatch");
  }

  @Test
  void gpuCoresAbove100AreAdmittedAndAllocatedAs100() {
    JsonNode p = pod(simulate("cores-clamp.yaml"), "hami-tests/cores-101");
    assertThat(phase(p)).isEqualTo("Running");
    assertThat(allocated(p)).isEqualTo(CARD0 + ",NVIDIA,4096,100:;");
  }

  @Test
  void twoGpusAreTwoDistinctCardsOnOneNode() {
    JsonNode p = pod(simulate("multi-card.yaml"), "hami-tests/two-cards");
    assertThat(uuids(p)).containsExactly(CARD0, CARD1);
    assertThat(allocated(p)).isEqualTo(CARD0 + ",NVIDIA,4096,25:" + CARD1 + ",NVIDIA,4096,25:;");
  }

  @Test
  void twoContainersEachGetTheirGpu() {
    JsonNode p = pod(simulate("two-containers.yaml"), "hami-tests/two-containers");
    assertThat(p.get("containers").get(0).get("name").stringValue()).isEqualTo("first");
    assertThat(p.get("containers").get(0).get("devices")).hasSize(1);
    assertThat(p.get("containers").get(1).get("devices")).hasSize(1);
    assertThat(allocated(p)).isEqualTo(CARD0 + ",NVIDIA,4096,25:;" + CARD1 + ",NVIDIA,4096,25:;");
  }

  @Test
  void aQuarterOfA40960MibCardIs10240Mib() {
    JsonNode p = pod(simulate("memory-percentage.yaml"), "hami-tests/quarter");
    assertThat(p.get("containers").get(0).get("devices").get(0).get("memoryMiB").intValue()).isEqualTo(10240);
    assertThat(allocated(p)).isEqualTo(CARD0 + ",NVIDIA,10240,25:;");
  }

  @Test
  void gpuBinpackUsesTheSameCardAndSpreadDifferentCards() {
    JsonNode binpack = simulate("gpu-binpack.yaml");
    assertThat(uuids(pod(binpack, "hami-tests/binpack-1"))).isEqualTo(uuids(pod(binpack, "hami-tests/binpack-2")));
    JsonNode spread = simulate("gpu-spread.yaml");
    assertThat(uuids(pod(spread, "hami-tests/spread-1"))).doesNotContainAnyElementsOf(uuids(pod(spread, "hami-tests/spread-2")));
    assertThat(pod(spread, "hami-tests/spread-2").get("node").stringValue()).isEqualTo(WORKER);
  }

  @Test
  void nodeBinpackUsesTheSameNodeAndSpreadDifferentNodes() {
    JsonNode binpack = simulate("node-binpack.yaml");
    assertThat(pod(binpack, "hami-tests/node-binpack-1").get("node").stringValue())
        .isEqualTo(pod(binpack, "hami-tests/node-binpack-2").get("node").stringValue());
    JsonNode spread = simulate("node-spread.yaml");
    assertThat(pod(spread, "hami-tests/node-spread-1").get("node").stringValue()).isEqualTo(WORKER);
    assertThat(pod(spread, "hami-tests/node-spread-2").get("node").stringValue()).isEqualTo(WORKER2);
  }

  @Test
  void cardTypeSelectionRunsA100AndWaitsForT4OrWithoutA100() {
    JsonNode r = simulate("gpu-type.yaml");
    assertThat(phase(pod(r, "hami-tests/use-a100"))).isEqualTo("Running");
    for (String waiting : new String[] {"use-t4", "avoid-a100"}) {
      JsonNode p = pod(r, "hami-tests/" + waiting);
      assertThat(phase(p)).isEqualTo("Pending");
      assertThat(reasons(p)).containsEntry(WORKER, "2/2 CardTypeMismatch").containsEntry(WORKER2, "2/2 CardTypeMismatch");
    }
  }

  @Test
  void uuidAllowAndDenyListsPickTheExactCard() {
    JsonNode r = simulate("uuid-lists.yaml");
    assertThat(uuids(pod(r, "hami-tests/allow-uuid"))).containsExactly(W2_CARD1);
    assertThat(uuids(pod(r, "hami-tests/deny-uuids"))).containsExactly(W2_CARD0);
  }

  @Test
  void memoryScaling2Lets61440MibFitOnA40960MibCard() {
    JsonNode before = simulateFirst("memory-scaling.yaml", 1, temp);
    JsonNode waiting = pod(before, "hami-tests/big");
    assertThat(phase(waiting)).isEqualTo("Pending");
    assertThat(reasons(waiting)).containsEntry(WORKER, "2/2 CardInsufficientMemory").containsEntry(WORKER2, "2/2 CardInsufficientMemory");
    assertThat(device(before, CARD0).get("memoryMiB").intValue()).isEqualTo(40960);

    JsonNode after = simulate("memory-scaling.yaml");
    assertThat(allocated(pod(after, "hami-tests/big"))).isEqualTo(CARD0 + ",NVIDIA,61440,0:;");
    assertThat(device(after, CARD0).get("memoryMiB").intValue()).isEqualTo(81920);
    assertThat(device(after, CARD0).get("model").stringValue()).isEqualTo("NVIDIA A100-SXM4-40GB");
    assertThat(after.get("timeline").get(1).get("event").stringValue()).isEqualTo("setConfig deviceMemoryScaling=2");
    assertThat(after.get("timeline").get(1).get("scheduled").toString()).isEqualTo("[\"hami-tests/big\"]");
  }

  @Test
  void aNamespaceQuotaRejectsExplicitMemoryAtAdmissionAndHoldsAPercentagePodUntilADelete() {
    JsonNode before = simulateFirst("namespace-quota.yaml", 3, temp);
    JsonNode rejected = pod(before, "team-a/over-quota");
    assertThat(phase(rejected)).isEqualTo("Rejected");
    assertThat(rejected.get("message").stringValue()).startsWith("exceeding resource quota");
    JsonNode quarter = pod(before, "team-a/quarter");
    assertThat(phase(quarter)).isEqualTo("Pending");
    assertThat(reasons(quarter)).containsEntry(WORKER, "2/2 ResourceQuotaNotFit").containsEntry(WORKER2, "2/2 ResourceQuotaNotFit");

    JsonNode after = simulate("namespace-quota.yaml");
    assertThat(allocated(pod(after, "team-a/quarter"))).isEqualTo(CARD0 + ",NVIDIA,10240,10:;");
    assertThat(after.get("quotas").get(0).get("usedMemoryMiB").intValue()).isEqualTo(10240);
  }

  @Test
  void theLabScenarioOfTheQuickstart() {
    JsonNode r = simulate("lab.yaml");
    assertThat(allocated(pod(r, "hami-tests/smoke"))).as("the lab's observed annotation").isEqualTo(CARD0 + ",NVIDIA,4096,25:;");
    assertThat(uuids(pod(r, "hami-tests/two-cards"))).containsExactly(CARD1, CARD0);
    assertThat(pod(r, "hami-tests/whole-card").get("node").stringValue()).isEqualTo(WORKER2);
    assertThat(phase(pod(r, "hami-tests/too-big"))).isEqualTo("Pending");
    assertThat(pod(r, "hami-tests/privileged").get("message").stringValue()).isEqualTo("container gpu is privileged");
  }
}
