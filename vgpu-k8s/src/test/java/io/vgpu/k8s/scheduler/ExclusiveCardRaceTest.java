package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 13's first counterexample through the HTTP extender: a sharing pod (1000 MiB, no cores) and an
 * exclusive one (1000 MiB, 100 cores) on a node with one empty card. Their two filters race, then
 * whichever passed is bound. The card must never end up holding both: the fit rule decides at
 * reservation as at filtering, so the second of two racing filters is refused with a reason, and so is
 * every later filter of it while the winner holds the card.
 */
@EnableKubernetesMockClient(crud = true)
class ExclusiveCardRaceTest {
  static final String CARD = "GPU-55555555-0000-0000-0000-0000000000";
  static final int ROUNDS = 12;

  KubernetesClient client;
  ClusterHarness cluster;
  final ExecutorService callers = Executors.newFixedThreadPool(2);

  @BeforeEach
  void start() throws Exception {
    cluster = new ClusterHarness(client);
    cluster.node("lone", Map.of(), Map.of(), ClusterHarness.cards(CARD, 1, 40960));
    cluster.start();
  }

  @AfterEach
  void stop() throws InterruptedException {
    callers.shutdownNow();
    callers.awaitTermination(5, TimeUnit.SECONDS);
    cluster.close();
  }

  @Test
  void twoRacingFiltersThenTwoBindsNeverShareAnExclusiveCard() throws Exception {
    int sharingWon = 0;
    int exclusiveWon = 0;
    for (int round = 0; round < ROUNDS; round++) {
      Pod sharing = cluster.create(ExtenderTest.gpuPod("default", "sharing-" + round, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
      Pod exclusive = cluster.create(ExtenderTest.gpuPod("default", "exclusive-" + round,
          Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "100"), Map.of()));

      // Two filters at once, released together so that they meet inside the extender.
      CyclicBarrier together = new CyclicBarrier(2);
      CompletableFuture<JsonNode> sharingFilter = CompletableFuture.supplyAsync(() -> filterAfter(together, sharing), callers);
      CompletableFuture<JsonNode> exclusiveFilter = CompletableFuture.supplyAsync(() -> filterAfter(together, exclusive), callers);
      JsonNode a = sharingFilter.get(30, TimeUnit.SECONDS);
      JsonNode b = exclusiveFilter.get(30, TimeUnit.SECONDS);
      assertThat(a.path("Error").asString()).isEmpty();
      assertThat(b.path("Error").asString()).isEmpty();
      boolean aPassed = passed(a);
      boolean bPassed = passed(b);
      assertThat(aPassed && bPassed).as("round %d: both filters passed on the one card: %s / %s", round, a, b).isFalse();
      assertThat(aPassed || bPassed).as("round %d: the empty card refused both: %s / %s", round, a, b).isTrue();
      JsonNode refused = aPassed ? b : a;
      assertThat(refused.path("FailedNodes").path("lone").asString()).as("the loser's reason").isNotBlank();

      // Then the binds, in the order kube-scheduler would send them; only the winner holds a grant.
      PodRef sharingRef = new PodRef("default", "sharing-" + round);
      PodRef exclusiveRef = new PodRef("default", "exclusive-" + round);
      PodRef winner = aPassed ? sharingRef : exclusiveRef;
      PodRef loser = aPassed ? exclusiveRef : sharingRef;
      assertThat(cluster.bind(winner, "lone").path("Error").asString()).isEmpty();
      cluster.completeAllocation(winner, "lone");
      // kube-scheduler does not bind the loser (its filter left no node); filtered afresh, it is refused again.
      Pod loserPod = aPassed ? exclusive : sharing;
      assertThat(passed(cluster.filter(loserPod, List.of("lone")))).as("a fresh filter of the refused pod").isFalse();
      assertThat(cluster.server.engine().grant(winner)).isPresent();
      assertThat(cluster.server.engine().grant(loser)).isEmpty();

      DeviceUsage card = cluster.server.engine().usage("lone").orElseThrow().devices().get(0);
      assertThat(card.sharers()).isEqualTo(1);
      assertThat(card.usedMemoryMiB()).isEqualTo(1000);
      assertThat(card.usedCores()).isEqualTo(winner == exclusiveRef ? 100 : 0);
      if (winner == sharingRef) {
        sharingWon++;
      } else {
        exclusiveWon++;
      }
      cluster.delete(sharingRef);
      cluster.delete(exclusiveRef);
    }
    assertThat(sharingWon + exclusiveWon).isEqualTo(ROUNDS);
  }

  private JsonNode filterAfter(CyclicBarrier together, Pod pod) {
    try {
      together.await(10, TimeUnit.SECONDS);
      return cluster.filter(pod, List.of("lone"));
    } catch (Exception e) {
      throw new IllegalStateException("filter of " + pod.getMetadata().getName() + " failed", e);
    }
  }

  private static boolean passed(JsonNode filterResult) {
    JsonNode names = filterResult.path("NodeNames");
    return names.isArray() && names.size() == 1 && names.get(0).asString().equals("lone");
  }
}
