package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.config.DeviceConfig;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** Several schedulers, leadership, stale reservations and the node handshake. */
@EnableKubernetesMockClient(crud = true)
class SchedulerLifecycleTest {
  KubernetesClient client;
  ClusterHarness cluster;
  final List<SchedulerServer> extra = new ArrayList<>();

  @BeforeEach
  void nodes() {
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards("GPU-11111111-0000-0000-0000-0000000000", 2, 40960));
  }

  @AfterEach
  void stop() {
    extra.forEach(SchedulerServer::close);
    cluster.close();
  }

  private static Pod small(String name) {
    return ExtenderTest.gpuPod("default", name, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of());
  }

  @Test
  void twoExtendersRacingForOneNodeLockHaveOneWinner() throws Exception {
    // Without a wait: the loser would otherwise wait for a device plugin this test does not run.
    SchedulerOptions noWait = SchedulerOptions.defaults().withNodeLockRetryTimeout(Duration.ZERO);
    cluster.start(noWait, DeviceConfig.DEFAULT);
    SchedulerServer other = SchedulerServer.start(noWait.withBinds("127.0.0.1:0", "127.0.0.1:0"), DeviceConfig.DEFAULT, client, cluster.clock);
    extra.add(other);
    Pod a = cluster.create(small("a"));
    Pod b = cluster.create(small("b"));
    cluster.filter(a, List.of("n1"));
    cluster.filter(b, List.of("n1"));
    int[] ports = {cluster.server.extenderPort(), other.extenderPort()};
    List<CompletableFuture<String>> binds = new ArrayList<>();
    String[] pods = {"a", "b"};
    for (int i = 0; i < 2; i++) {
      String body = "{\"PodName\":\"" + pods[i] + "\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":\"n1\"}";
      binds.add(cluster.http.sendAsync(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ports[i] + "/bind")).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
              HttpResponse.BodyHandlers.ofString())
          .thenApply(r -> ClusterHarness.JSON.readTree(r.body()).path("Error").asString()));
    }
    List<String> errors = List.of(binds.get(0).get(), binds.get(1).get());
    assertThat(errors).filteredOn(String::isEmpty).hasSize(1);
    assertThat(errors).filteredOn(e -> e.contains("node lock contention")).hasSize(1);
  }

  @Test
  void aWarmUpAtStartLeavesTheLedgerAsTheClusterHasIt() throws Exception {
    cluster.start(SchedulerOptions.defaults().withWarmUpRounds(200), DeviceConfig.DEFAULT);

    // Its made-up nodes and pods are its own: the scheduler knows the cluster's node and no grant.
    assertThat(cluster.server.engine().nodeNames()).containsExactly("n1");
    assertThat(cluster.server.engine().grants()).isEmpty();
    Pod a = cluster.create(small("a"));
    cluster.filter(a, List.of("n1"));
    assertThat(cluster.server.engine().grant(new PodRef("default", "a"))).isPresent();
    assertThat(cluster.server.engine().grants()).hasSize(1);
  }

  @Test
  void aReservationOfAPodNeverBoundIsGivenBackAndReturnsIfItIsBound() throws Exception {
    cluster.start(SchedulerOptions.defaults().withStaleReservationTimeout(Duration.ofMinutes(5)), DeviceConfig.DEFAULT);
    Pod a = cluster.create(small("a"));
    cluster.filter(a, List.of("n1"));
    PodRef ref = new PodRef("default", "a");
    ClusterHarness.await(() -> cluster.server.engine().grant(ref).isPresent(), "reservation");
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grant(ref)).as("not stale yet").isPresent();
    cluster.clock.advance(Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grant(ref)).isEmpty();
    // kube-scheduler binds it after all: the grant counts again.
    assertThat(cluster.bind(ref, "n1").path("Error").asString()).isEmpty();
    cluster.completeAllocation(ref, "n1");
    ClusterHarness.await(() -> cluster.server.engine().grant(ref).isPresent(), "the grant to come back once bound");
  }

  @Test
  void followsKubeSchedulersLease() throws Exception {
    client.leases().inNamespace("kube-system").resource(new LeaseBuilder().withNewMetadata().withName("hami-scheduler").withNamespace("kube-system").endMetadata()
        .withNewSpec().withHolderIdentity("other-pod_1234").withLeaseDurationSeconds(15).withRenewTime(ZonedDateTime.now()).endSpec().build()).create();
    cluster.start(SchedulerOptions.defaults().withLeaderElection("hami-scheduler", "kube-system", "vgpu-0"), DeviceConfig.DEFAULT);
    assertThat(cluster.probe("/readyz").statusCode()).isEqualTo(503);
    Pod a = cluster.create(small("a"));
    assertThat(cluster.filter(a, List.of("n1")).path("Error").asString()).isEqualTo("this scheduler instance is not the leader");

    client.leases().inNamespace("kube-system").withName("hami-scheduler").edit(l -> new LeaseBuilder(l).editSpec().withHolderIdentity("vgpu-0_5678").endSpec().build());
    ClusterHarness.await(() -> cluster.server.ready(), "leadership");
    assertThat(cluster.probe("/readyz").statusCode()).isEqualTo(200);
    JsonNode filtered = cluster.filter(a, List.of("n1"));
    assertThat(filtered.path("NodeNames").toString()).isEqualTo("[\"n1\"]");
  }

  @Test
  void aHolderWhoseHostnameOnlyStartsWithOursIsAnotherInstance() throws Exception {
    client.leases().inNamespace("kube-system").resource(new LeaseBuilder().withNewMetadata().withName("hami-scheduler").withNamespace("kube-system").endMetadata()
        .withNewSpec().withHolderIdentity("vgpu-10_1234").withLeaseDurationSeconds(15).withRenewTime(ZonedDateTime.now()).endSpec().build()).create();
    cluster.start(SchedulerOptions.defaults().withLeaderElection("hami-scheduler", "kube-system", "vgpu-1"), DeviceConfig.DEFAULT);
    Pod a = cluster.create(small("a"));
    assertThat(cluster.filter(a, List.of("n1")).path("Error").asString()).isEqualTo("this scheduler instance is not the leader");
    assertThat(cluster.server.ready()).isFalse();
    // Neither a bare hostname nor another separator counts: kube-scheduler writes <hostname>_<uuid>.
    for (String holder : List.of("vgpu-1", "vgpu-1-5678", "vgpu-1.5678")) {
      client.leases().inNamespace("kube-system").withName("hami-scheduler").edit(l -> new LeaseBuilder(l).editSpec().withHolderIdentity(holder).endSpec().build());
      ClusterHarness.await(() -> holder.equals(client.leases().inNamespace("kube-system").withName("hami-scheduler").get().getSpec().getHolderIdentity()), "the edit");
      Thread.sleep(200);
      assertThat(cluster.server.ready()).as(holder).isFalse();
    }
    client.leases().inNamespace("kube-system").withName("hami-scheduler").edit(l -> new LeaseBuilder(l).editSpec().withHolderIdentity("vgpu-1_5678").endSpec().build());
    ClusterHarness.await(() -> cluster.server.ready(), "leadership");
  }

  @Test
  void aNodeWhoseDevicePluginStopsReportingLosesItsDevices() throws Exception {
    cluster.start();
    ClusterHarness.await(() -> cluster.server.engine().hasNode("n1"), "n1 registered");
    cluster.server.registerPass();
    ClusterHarness.await(() -> client.nodes().withName("n1").get().getMetadata().getAnnotations().containsKey(NodeHealth.HANDSHAKE), "the handshake");
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations().get(NodeHealth.HANDSHAKE)).startsWith("Requesting_");
    client.nodes().withName("n1").edit(n -> {
      n.getStatus().getAllocatable().put("nvidia.com/gpu", new io.fabric8.kubernetes.api.model.Quantity("0"));
      return n;
    });
    ClusterHarness.await(() -> !cluster.server.engine().hasNode("n1"), "n1 withdrawn");
    client.nodes().withName("n1").edit(n -> {
      n.getStatus().getAllocatable().put("nvidia.com/gpu", new io.fabric8.kubernetes.api.model.Quantity("20"));
      return n;
    });
    ClusterHarness.await(() -> cluster.server.engine().hasNode("n1"), "n1 back");
  }
}
