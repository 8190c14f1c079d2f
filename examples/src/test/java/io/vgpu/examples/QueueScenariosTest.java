package io.vgpu.examples;

import static io.vgpu.examples.ScenarioRunner.pod;
import static io.vgpu.examples.ScenarioRunner.simulate;
import static io.vgpu.examples.ScenarioRunner.simulateFirst;
import static io.vgpu.examples.ScenarioRunner.uuids;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/** Each scenario of {@code examples/scenarios/queues}, replayed by {@code vgpu simulate --output json}. */
class QueueScenariosTest {
  @TempDir Path tempDir;

  @Test
  void kaiPortionsAreKaisNumbersAndTheQueueCountsThem() {
    JsonNode out = simulate("queues/01-kai-portions.yaml");
    JsonNode half = pod(out, "default/half");
    assertThat(half.get("gpuPortion").asDouble()).isEqualTo(0.51);
    assertThat(half.at("/containers/0/devices/0/memoryMiB").asInt()).isEqualTo(20889);
    assertThat(half.at("/containers/0/env/CUDA_DEVICE_MEMORY_LIMIT_0").asString()).isEqualTo("20889m");
    assertThat(pod(out, "default/quarter").get("gpuPortion").asDouble()).isEqualTo(0.25);
    assertThat(pod(out, "default/quarter").at("/containers/0/devices/0/memoryMiB").asInt()).isEqualTo(10240);
    assertThat(pod(out, "default/whole").has("gpuPortion")).isFalse();
    assertThat(out.get("queues").toString())
        .isEqualTo(
            "[{\"name\":\"research\",\"parent\":null,"
                + "\"gpu\":{\"deserved\":4,\"requested\":1.76,\"allocated\":1.76,\"fairShare\":1.76,\"maxAllowed\":null},"
                + "\"cpu\":{\"deserved\":0,\"requested\":0,\"allocated\":0,\"fairShare\":0,\"maxAllowed\":null},"
                + "\"memory\":{\"deserved\":0,\"requested\":0,\"allocated\":0,\"fairShare\":0,\"maxAllowed\":null}}]");
  }

  @Test
  void thirteenSixHundredPodsNeverOverCommitACard() {
    JsonNode out = simulate("queues/02-never-over-commit.yaml");
    List<String> cards = new ArrayList<>();
    for (String p : List.of("default/m1", "default/m2", "default/m3")) {
      assertThat(pod(out, p).at("/containers/0/devices/0/memoryMiB").asInt()).isEqualTo(13926);
      cards.add(uuids(pod(out, p)).get(0));
    }
    assertThat(cards.get(0)).isEqualTo(cards.get(1));
    assertThat(cards.get(2)).isNotEqualTo(cards.get(0));
    assertThat(out.at("/nodes/0/devices/0/usedMemoryMiB").asInt()).isEqualTo(27852);
  }

  @Test
  void aQueueLimitHoldsAPodBackUntilRoomIsMade() {
    JsonNode before = simulateFirst("queues/03-queue-limit.yaml", 3, tempDir);
    JsonNode quarter = pod(before, "default/quarter");
    assertThat(quarter.get("phase").asString()).isEqualTo("Pending");
    assertThat(quarter.at("/waiting/reason").asString()).isEqualTo("QueueLimit");
    assertThat(quarter.at("/waiting/message").asString()).isEqualTo("queue research: gpu 1.50 held + 0.25 asked > limit 1.50");
    assertThat(quarter.has("reasons")).isFalse();
    JsonNode after = simulate("queues/03-queue-limit.yaml");
    assertThat(pod(after, "default/quarter").get("phase").asString()).isEqualTo("Running");
    assertThat(after.at("/queues/0/gpu/allocated").asDouble()).isEqualTo(1.25);
    assertThat(after.at("/queues/0/gpu/maxAllowed").asDouble()).isEqualTo(1.5);
  }

  @Test
  void aPodWaitsForItsQueueAndALeafQueue() {
    JsonNode before = simulateFirst("queues/04-queue-missing.yaml", 2, tempDir);
    assertThat(pod(before, "default/early").at("/waiting/reason").asString()).isEqualTo("QueueMissing");
    assertThat(pod(before, "default/early").at("/waiting/message").asString()).isEqualTo("queue team-b does not exist");
    JsonNode after = simulate("queues/04-queue-missing.yaml");
    assertThat(pod(after, "default/early").get("phase").asString()).isEqualTo("Running");
    assertThat(pod(after, "default/on-parent").at("/waiting/message").asString())
        .isEqualTo("queue department has child queues; only a leaf queue takes pods");
    assertThat(after.get("queues")).extracting(q -> q.get("name").asString()).containsExactly("department", "team-a", "team-b");
  }

  @Test
  void aGangRunsWholeOnceItsMembersArriveAndAGangThatCannotFitHoldsNothing() {
    JsonNode two = simulateFirst("queues/05-gang.yaml", 3, tempDir);
    for (String p : List.of("default/worker-0", "default/worker-1")) {
      assertThat(pod(two, p).at("/waiting/reason").asString()).isEqualTo("GangIncomplete");
      assertThat(pod(two, p).at("/waiting/message").asString()).isEqualTo("gang default/pg-train has 2 of its 3 members");
    }
    assertThat(two.at("/nodes/0/devices/0/usedMemoryMiB").asInt()).isZero();
    JsonNode out = simulate("queues/05-gang.yaml");
    assertThat(out.at("/timeline/3/scheduled").toString()).isEqualTo("[\"default/worker-0\",\"default/worker-1\",\"default/worker-2\"]");
    for (String p : List.of("default/big-0", "default/big-1", "default/big-2")) {
      assertThat(pod(out, p).get("phase").asString()).isEqualTo("Pending");
      assertThat(pod(out, p).at("/waiting/reason").asString()).isEqualTo("GangIncomplete");
    }
    assertThat(pod(simulateFirst("queues/05-gang.yaml", 8, tempDir), "default/big-0").at("/waiting/message").asString())
        .isEqualTo("1 of 3 members fit, 3 needed; default/big-1: fits on no node");
    assertThat(pod(out, "default/big-0").at("/waiting/message").asString()).isEqualTo("0 of 3 members fit, 3 needed; default/big-0: fits on no node");
    assertThat(pod(out, "default/lone").get("phase").asString()).isEqualTo("Running");
  }

  @Test
  void theDivisionFollowsPriorityThenWeight() {
    JsonNode out = simulate("queues/06-fair-share.yaml");
    assertThat(out.get("queues")).extracting(q -> q.get("name").asString() + "=" + q.at("/gpu/fairShare").asDouble())
        .containsExactly("production=3.0", "research=5.0", "team-a=3.0", "team-b=2.0");
    assertThat(out.at("/queues/2/gpu/allocated").asDouble()).isEqualTo(5.0);
    assertThat(pod(out, "default/b-1").get("phase").asString()).isEqualTo("Pending");
  }

  @Test
  void deletingAQueueKeepsItsRunningPodsCounted() {
    JsonNode out = simulate("queues/07-delete-queue.yaml");
    assertThat(pod(out, "default/running").get("phase").asString()).isEqualTo("Running");
    assertThat(pod(out, "default/late").at("/waiting/reason").asString()).isEqualTo("QueueMissing");
    assertThat(pod(out, "default/elsewhere").get("reasons").toString()).contains("CardInsufficientMemory");
    assertThat(out.get("queues")).extracting(q -> q.get("name").asString()).containsExactly("default-queue");
  }

  @Test
  void kaisAdmissionRulesRefuseWithKaisMessages() {
    JsonNode out = simulate("queues/08-kai-admission.yaml");
    assertThat(pod(out, "default/too-big").get("message").asString()).isEqualTo("gpu-fraction annotation value must be a positive number smaller than 1.0");
    assertThat(pod(out, "default/both").get("message").asString()).isEqualTo("cannot request both GPU and GPU memory");
    assertThat(pod(out, "default/with-unit").get("message").asString()).isEqualTo("gpu-memory annotation value must be a positive integer greater than 0");
    assertThat(pod(out, "default/count-only").get("message").asString())
        .isEqualTo("cannot request multiple fractional devices without specifying fraction portion or gpu-memory");
    JsonNode two = pod(out, "default/two-halves");
    assertThat(uuids(two)).hasSize(2);
    assertThat(two.get("gpuPortion").asDouble()).isEqualTo(0.5);
  }
}
