package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.NodeUsage;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.node.ObjectNode;

/**
 * What a bind must never do: post a pod whose card was given out again meanwhile, wait on a lock for
 * a pod without GPUs or for a holder that is done, or go on once kube-scheduler has stopped waiting.
 */
@EnableKubernetesMockClient(crud = true)
class BindSafetyTest {
  static final String CARDS = "GPU-88888888-0000-0000-0000-0000000000";

  KubernetesClient client;
  ClusterHarness cluster;

  @BeforeEach
  void node() {
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards(CARDS, 1, 40960));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private Pod whole(String name) {
    return cluster.create(ExtenderTest.gpuPod("team-a", name, Map.of("nvidia.com/gpu", "1"), Map.of()));
  }

  private Pod share(String name) {
    return cluster.create(ExtenderTest.gpuPod("team-a", name, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
  }

  private static PodRef ref(String name) {
    return new PodRef("team-a", name);
  }

  private List<Event> warnings(String pod) {
    return client.v1().events().inNamespace("team-a").list().getItems().stream()
        .filter(e -> pod.equals(e.getInvolvedObject().getName()) && "Warning".equals(e.getType()))
        .toList();
  }

  private String lock() {
    Map<String, String> annotations = client.nodes().withName("n1").get().getMetadata().getAnnotations();
    return annotations == null ? null : annotations.get(HamiAnnotations.NODE_LOCK);
  }

  private boolean bound(String pod) {
    return client.bindings().inNamespace("team-a").withName(pod).get() != null;
  }

  private void filteredTo(Pod pod, String node) throws Exception {
    assertThat(cluster.filter(pod, List.of("n1")).path("NodeNames").toString()).isEqualTo("[\"" + node + "\"]");
  }

  private void assertNoCardOverCommitted() {
    for (NodeUsage node : cluster.server.engine().usage()) {
      for (DeviceUsage d : node.devices()) {
        assertThat(d.usedCores()).isLessThanOrEqualTo(d.device().cores());
        assertThat(d.usedMemoryMiB()).isLessThanOrEqualTo(d.device().memoryMiB());
      }
    }
  }

  @Test
  void aReservationGivenBackIsReservedAgainAtBindWhenItStillFits() throws Exception {
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    filteredTo(share("late"), "n1");
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grant(ref("late"))).isEmpty();

    assertThat(cluster.bind(ref("late"), "n1").path("Error").asString()).isEmpty();
    assertThat(cluster.server.engine().grant(ref("late"))).isPresent();
    assertThat(bound("late")).isTrue();
  }

  @Test
  void aReservationGivenBackAndGivenOutAgainIsNotBound() throws Exception {
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    filteredTo(whole("late"), "n1");
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    filteredTo(whole("taker"), "n1");

    String refused = cluster.bind(ref("late"), "n1").path("Error").asString();
    assertThat(refused).startsWith("pod team-a/late: its reservation on node n1 was given back and no longer fits: ");
    assertThat(bound("late")).isFalse();
    assertThat(lock()).isNull();
    ClusterHarness.await(() -> warnings("late").stream().anyMatch(e -> e.getReason().equals("BindingFailed") && e.getMessage().equals(refused)), "a BindingFailed event");
    assertThat(cluster.bind(ref("taker"), "n1").path("Error").asString()).isEmpty();
    assertNoCardOverCommitted();
  }

  @Test
  void aBindCaughtByARestartIsRefusedWhenItsCardWasGivenOutMeanwhile() throws Exception {
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    filteredTo(whole("late"), "n1");
    cluster.stop();
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    assertThat(cluster.server.engine().grant(ref("late"))).as("no longer a live reservation").isEmpty();
    filteredTo(whole("taker"), "n1");

    assertThat(cluster.bind(ref("late"), "n1").path("Error").asString()).contains("was given back and no longer fits");
    assertThat(cluster.bind(ref("taker"), "n1").path("Error").asString()).isEmpty();
    assertNoCardOverCommitted();
  }

  @Test
  void anAllocationEditedAfterTheFilterIsNotBound() throws Exception {
    cluster.start();
    filteredTo(share("editor"), "n1");
    ObjectNode patch = ClusterHarness.JSON.createObjectNode();
    patch.putObject("metadata").putObject("annotations").put(HamiAnnotations.DEVICES_ALLOCATED, CARDS + "00,NVIDIA,40960,100:;");
    client.pods().inNamespace("team-a").withName("editor").patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
    // The cache may hold the pod before the filter's own write reached it: no annotations yet.
    ClusterHarness.await(() -> cluster.server.ledger().pod(ref("editor")).map(p -> p.getMetadata().getAnnotations()).map(a -> a.get(HamiAnnotations.DEVICES_ALLOCATED))
        .filter(a -> a.contains("40960")).isPresent(), "the edit to reach the cache");

    assertThat(cluster.bind(ref("editor"), "n1").path("Error").asString())
        .isEqualTo("pod team-a/editor: its hami.io/vgpu-devices-allocated is not the reservation this scheduler holds for it");
    assertThat(bound("editor")).isFalse();
  }

  @Test
  void aPodWithoutGpusBindsWithoutTheLockWhateverItsAnnotationsSay() throws Exception {
    cluster.start(SchedulerOptions.defaults().withCpuOnlyPodPlacement(true), DeviceConfig.DEFAULT);
    filteredTo(share("holder"), "n1");
    assertThat(cluster.bind(ref("holder"), "n1").path("Error").asString()).isEmpty();
    String held = lock();
    assertThat(held).endsWith(",team-a,holder");
    // Annotations its owner wrote after creating it: the spec asks for no GPU.
    cluster.create(ExtenderTest.gpuPod("team-a", "cpu", Map.of("cpu", "100m"),
        Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, CARDS + "00,NVIDIA,40960,100:;")));

    long start = System.nanoTime();
    assertThat(cluster.bind(ref("cpu"), "n1").path("Error").asString()).isEmpty();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("no wait for the lock").isLessThan(Duration.ofSeconds(2));
    assertThat(bound("cpu")).isTrue();
    assertThat(lock()).isEqualTo(held);
  }

  @Test
  void aFinishedOrDeletingLockHolderNoLongerHoldsTheLock() throws Exception {
    cluster.start(SchedulerOptions.defaults().withNodeLockRetryTimeout(Duration.ofSeconds(20)), DeviceConfig.DEFAULT);
    for (String name : List.of("failed", "deleting", "next")) {
      filteredTo(share(name), "n1");
    }
    assertThat(cluster.bind(ref("failed"), "n1").path("Error").asString()).isEmpty();
    client.pods().inNamespace("team-a").withName("failed").editStatus(p -> new PodBuilder(p).editOrNewStatus().withPhase("Failed").endStatus().build());

    long start = System.nanoTime();
    assertThat(cluster.bind(ref("deleting"), "n1").path("Error").asString()).isEmpty();
    assertThat(lock()).endsWith(",team-a,deleting");
    ObjectNode deleting = ClusterHarness.JSON.createObjectNode();
    deleting.putObject("metadata").put("deletionTimestamp", "2026-12-01T00:00:00Z");
    client.pods().inNamespace("team-a").withName("deleting").patch(PatchContext.of(PatchType.JSON_MERGE), deleting.toString());

    assertThat(cluster.bind(ref("next"), "n1").path("Error").asString()).isEmpty();
    assertThat(lock()).endsWith(",team-a,next");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("each holder let go within a look or two").isLessThan(Duration.ofSeconds(8));
  }

  @Test
  void theBindWaitEndsWithinTheRetryTimeout() throws Exception {
    cluster.start(SchedulerOptions.defaults().withNodeLockRetryTimeout(Duration.ofSeconds(2)), DeviceConfig.DEFAULT);
    filteredTo(share("holder"), "n1");
    filteredTo(share("waiter"), "n1");
    assertThat(cluster.bind(ref("holder"), "n1").path("Error").asString()).isEmpty();
    long start = System.nanoTime();
    assertThat(cluster.bind(ref("waiter"), "n1").path("Error").asString()).isEqualTo("node n1 has been locked within 5m0s: node lock contention");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2)).isGreaterThan(Duration.ofMillis(1000));
  }

  @Test
  void aBindStopsAsSoonAsKubeSchedulerGivesUp() throws Exception {
    cluster.start();
    filteredTo(share("holder"), "n1");
    filteredTo(share("waiter"), "n1");
    assertThat(cluster.bind(ref("holder"), "n1").path("Error").asString()).isEmpty();

    String args = "{\"PodName\":\"waiter\",\"PodNamespace\":\"team-a\",\"PodUID\":\""
        + client.pods().inNamespace("team-a").withName("waiter").get().getMetadata().getUid() + "\",\"Node\":\"n1\"}";
    HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.server.extenderPort() + "/bind"))
        .timeout(Duration.ofMillis(500)).POST(HttpRequest.BodyPublishers.ofString(args)).build();
    assertThatThrownBy(() -> cluster.http.send(request, HttpResponse.BodyHandlers.ofString())).isInstanceOf(HttpTimeoutException.class);
    ClusterHarness.await(() -> warnings("waiter").stream().anyMatch(e -> e.getMessage().startsWith("kube-scheduler gave up on the bind request")), "the bind to stop");

    // The lock comes free: nobody waits for it any more.
    cluster.completeAllocation(ref("holder"), "n1");
    Thread.sleep(1500);
    assertThat(lock()).isNull();
    assertThat(bound("waiter")).isFalse();
  }
}
