package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Pods can write their own annotations: a grant written by anyone but the scheduler must never hold a
 * card, and a reservation must not outlive the reservation timeout whatever its annotations say.
 */
@EnableKubernetesMockClient(crud = true)
class LedgerTrustTest {
  static final String CARDS = "GPU-33333333-0000-0000-0000-0000000000";
  static final String CARD0 = CARDS + "00";
  static final String CARD1 = CARDS + "01";

  KubernetesClient client;
  ClusterHarness cluster;

  @BeforeEach
  void nodes() {
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards(CARDS, 2, 40960));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private Pod forged(String name, Map<String, String> extra) {
    Map<String, String> annotations = new HashMap<>(extra);
    annotations.put(HamiAnnotations.ASSIGNED_NODE, "n1");
    annotations.put(HamiAnnotations.DEVICES_ALLOCATED, CARD0 + ",NVIDIA,40960,100:;");
    return cluster.create(ExtenderTest.gpuPod("tenant", name, Map.of("nvidia.com/gpu", "1"), annotations));
  }

  private List<Event> warnings(String pod) {
    return client.v1().events().inNamespace("tenant").list().getItems().stream()
        .filter(e -> pod.equals(e.getInvolvedObject().getName()) && "Warning".equals(e.getType()))
        .toList();
  }

  private String now() {
    return Long.toString(cluster.clock.instant().getEpochSecond());
  }

  private void annotate(PodRef pod, Map<String, String> annotations) {
    var patch = ClusterHarness.JSON.createObjectNode();
    var a = patch.putObject("metadata").putObject("annotations");
    annotations.forEach(a::put);
    client.pods().inNamespace(pod.namespace()).withName(pod.name()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
  }

  /** The whole first card is free: an exclusive pod pinned to it is placed there. */
  private void assertCard0IsFree(String name) throws Exception {
    Pod whole = cluster.create(ExtenderTest.gpuPod("default", name, Map.of("nvidia.com/gpu", "1"), Map.of(HamiAnnotations.USE_GPU_UUID, CARD0)));
    var filtered = cluster.filter(whole, List.of("n1"));
    assertThat(filtered.path("NodeNames").toString()).as(filtered.toString()).isEqualTo("[\"n1\"]");
  }

  @Test
  void aForgedAllocationOnAPodThatNeverPassedTheSchedulerHoldsNoCard() throws Exception {
    cluster.start();
    forged("forger", Map.of(HamiAnnotations.ASSIGNED_TIME, now()));
    ClusterHarness.await(() -> !warnings("forger").isEmpty(), "a warning event on the forged pod");
    assertThat(cluster.server.engine().grant(new PodRef("tenant", "forger"))).isEmpty();
    assertThat(warnings("forger").get(0).getReason()).isEqualTo("GrantIgnored");
    assertThat(warnings("forger").get(0).getMessage())
        .isEqualTo("ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node n1: the pod is not bound there and this scheduler made no reservation for it");
    assertCard0IsFree("real");
    // Further updates of the same forged grant add no events.
    annotate(new PodRef("tenant", "forger"), Map.of("x", "y"));
    Thread.sleep(300);
    assertThat(warnings("forger")).hasSize(1);
  }

  @Test
  void forgedGrantsNamingUnknownNodesOrDevicesAreIgnored() throws Exception {
    cluster.start();
    cluster.create(ExtenderTest.gpuPod("tenant", "ghost-node", Map.of("nvidia.com/gpu", "1"),
        Map.of(HamiAnnotations.ASSIGNED_NODE, "n9", HamiAnnotations.DEVICES_ALLOCATED, CARD0 + ",NVIDIA,1000,0:;")));
    cluster.create(ExtenderTest.gpuPod("tenant", "ghost-card", Map.of("nvidia.com/gpu", "1"),
        Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, "GPU-nope,NVIDIA,1000,0:;")));
    ClusterHarness.await(() -> warnings("ghost-node").size() == 1 && warnings("ghost-card").size() == 1, "warnings");
    assertThat(warnings("ghost-node").get(0).getMessage()).isEqualTo("ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node n9: the node does not exist");
    assertThat(warnings("ghost-card").get(0).getMessage())
        .isEqualTo("ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node n1: device GPU-nope is not registered on the node");
    assertThat(cluster.server.engine().grants()).isEmpty();
  }

  @Test
  void aForgedReservationFoundAtStartIsGivenBackAfterTheTimeoutAndNeverReturns() throws Exception {
    forged("timed", Map.of(HamiAnnotations.ASSIGNED_TIME, now()));
    forged("untimed", Map.of());
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    PodRef timed = new PodRef("tenant", "timed");
    // A reservation found at start may be a previous scheduler's: kept while it is live...
    assertThat(cluster.server.engine().grant(timed)).isPresent();
    // ...but one without a readable time never is.
    assertThat(cluster.server.engine().grant(new PodRef("tenant", "untimed"))).isEmpty();
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grant(timed)).isEmpty();
    // The tenant refreshes the time: the card stays free.
    annotate(timed, Map.of(HamiAnnotations.ASSIGNED_TIME, now()));
    ClusterHarness.await(() -> now().equals(client.pods().inNamespace("tenant").withName("timed").get().getMetadata().getAnnotations().get(HamiAnnotations.ASSIGNED_TIME)), "the update");
    Thread.sleep(200);
    assertThat(cluster.server.engine().grant(timed)).isEmpty();
    assertCard0IsFree("real");
  }

  @Test
  void aReservationWhoseTimesArePulledOrGarbledIsStaleAfterTheTimeoutLikeAnyOther() throws Exception {
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    List<Map<String, String>> edits =
        List.of(
            Map.of(HamiAnnotations.ASSIGNED_TIME, "soon"),
            Map.of(HamiAnnotations.ASSIGNED_TIME, "99999999999"),
            Map.of(HamiAnnotations.BIND_PHASE, "allocating"));
    for (int i = 0; i < edits.size(); i++) {
      Pod pod = cluster.create(ExtenderTest.gpuPod("tenant", "p" + i, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
      cluster.filter(pod, List.of("n1"));
      annotate(new PodRef("tenant", "p" + i), edits.get(i));
    }
    ClusterHarness.await(() -> client.pods().inNamespace("tenant").withName("p2").get().getMetadata().getAnnotations().containsKey(HamiAnnotations.BIND_PHASE), "the edits");
    Thread.sleep(200); // for the informer
    assertThat(cluster.server.engine().grants()).hasSize(3);
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grants()).as("not stale yet").hasSize(3);
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grants()).isEmpty();
  }

  @Test
  void editingTheAllocationOfARunningPodMovesNothing() throws Exception {
    cluster.start();
    Pod pod = cluster.create(ExtenderTest.gpuPod("tenant", "runner", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"),
        Map.of(HamiAnnotations.USE_GPU_UUID, CARD1)));
    assertThat(cluster.schedule(pod, List.of("n1"))).contains("n1");
    PodRef ref = new PodRef("tenant", "runner");
    var before = cluster.server.engine().grant(ref).orElseThrow();
    annotate(ref, Map.of(HamiAnnotations.DEVICES_ALLOCATED, CARD0 + ",NVIDIA,40960,100:;"));
    ClusterHarness.await(() -> warnings("runner").stream().anyMatch(e -> e.getReason().equals("GrantIgnored")), "a warning");
    assertThat(cluster.server.engine().grant(ref)).contains(before);
    assertCard0IsFree("real");
  }

  @Test
  void aForgedGrantOnABoundPodThatAsksForNoGpuFillsNoCard() throws Exception {
    cluster.start();
    // Created on the node with the annotations (the webhook need not see a pod without GPUs at all).
    Pod cpuOnly = ExtenderTest.gpuPod("tenant", "squatter", Map.of("cpu", "100m"),
        Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, CARD0 + ",NVIDIA,40960,100:;", HamiAnnotations.ASSIGNED_TIME, now()));
    cpuOnly.getSpec().setNodeName("n1");
    cluster.create(cpuOnly);
    ClusterHarness.await(() -> !warnings("squatter").isEmpty(), "a warning event on the squatter");
    assertThat(warnings("squatter").get(0).getReason()).isEqualTo("GrantIgnored");
    assertThat(warnings("squatter").get(0).getMessage())
        .isEqualTo("ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node n1: the pod asks for no nvidia.com/gpu");
    assertThat(cluster.server.engine().grants()).isEmpty();
    assertCard0IsFree("real");
  }

  @Test
  void aGrantAnnotationOverTheBoundTheCacheKeepsIsUnreadable() throws Exception {
    cluster.start();
    Pod pod = ExtenderTest.gpuPod("tenant", "padded", Map.of("nvidia.com/gpu", "1"),
        Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, (CARD0 + ",NVIDIA,40960,100:").repeat(600) + ";"));
    pod.getSpec().setNodeName("n1");
    cluster.create(pod);
    ClusterHarness.await(() -> !warnings("padded").isEmpty(), "a warning event on the padded pod");
    assertThat(warnings("padded").get(0).getMessage())
        .isEqualTo("ignoring " + HamiAnnotations.DEVICES_ALLOCATED + " on node n1: it is unreadable: " + HamiAnnotations.DEVICES_ALLOCATED
            + " is longer than 32768 characters");
    assertThat(cluster.server.engine().grants()).isEmpty();
  }
}
