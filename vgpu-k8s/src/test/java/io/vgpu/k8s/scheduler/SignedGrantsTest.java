package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.grant.GrantKey;
import io.vgpu.k8s.grant.GrantKeySecret;
import io.vgpu.k8s.grant.GrantSignature;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** With --grant-key-secret the filter signs every grant it writes, in the same write as the grant. */
@EnableKubernetesMockClient(crud = true)
class SignedGrantsTest {
  static final String CARD = "GPU-12345678-1234-1234-1234-123456780000";

  KubernetesClient client;
  ClusterHarness cluster;

  @BeforeEach
  void nodes() {
    cluster = new ClusterHarness(client);
    cluster.node("worker1", Map.of(), Map.of(), ClusterHarness.cards("GPU-12345678-1234-1234-1234-1234567800", 2, 40960));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  @Test
  void theFilterWritesTheSignatureBesideTheGrantInOnePatch() {
    byte[] bytes = new byte[GrantKey.LENGTH];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) i;
    }
    PodGrant grant = new PodGrant(new PodRef("default", "p1"), "worker1", List.of(),
        List.of(new ContainerGrant("gpu", List.of(new DeviceGrant(CARD, "NVIDIA", 4096, 25)))));
    String uid = "5f1d2c3b-0000-4000-8000-000000000001";
    // The signature is HMAC-SHA256 over "36:<uid>7:worker1<n>:<allocated>" under the key 00 01 .. 1f.
    assertThat(Extender.decisionPatch(grant, "1764547200", new GrantSignature(GrantKey.of(bytes)), uid))
        .isEqualTo("{\"metadata\":{\"annotations\":{"
            + "\"hami.io/vgpu-node\":\"worker1\","
            + "\"hami.io/vgpu-time\":\"1764547200\","
            + "\"hami.io/vgpu-devices-to-allocate\":\"" + CARD + ",NVIDIA,4096,25:;\","
            + "\"hami.io/vgpu-devices-allocated\":\"" + CARD + ",NVIDIA,4096,25:;\","
            + "\"vgpu.io/grant-signature\":\"v1.2JsnUcUesG1iy4vON1B4ZEIYQTun-BWm97w7UqK9zIU\"},"
            + "\"labels\":{\"hami.io/vgpu-node\":\"worker1\"}}}");
    // Without a key: HAMi's patch, as before.
    assertThat(Extender.decisionPatch(grant, "1764547200", null, uid)).doesNotContain("grant-signature");
  }

  @Test
  void theKeyIsMadeAtStartAndEveryGrantTheFilterWritesVerifies() throws Exception {
    cluster.start(SchedulerOptions.defaults().withGrantKeySecret("kube-system/hami-scheduler-grant-key"), DeviceConfig.DEFAULT);
    GrantKeySecret secret = GrantKeySecret.parse(client, "--grant-key-secret", "kube-system/hami-scheduler-grant-key");
    GrantKey key = secret.read().orElseThrow(() -> new AssertionError("the scheduler made no key before serving"));

    Pod pod = ExtenderTest.gpuPod("team-a", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096"), Map.of());
    pod.getMetadata().setUid("5f1d2c3b-0000-4000-8000-00000000000a");
    Pod created = cluster.create(pod);
    assertThat(cluster.filter(created, List.of("worker1")).path("NodeNames").toString()).isEqualTo("[\"worker1\"]");
    Map<String, String> annotations = client.pods().inNamespace("team-a").withName("p1").get().getMetadata().getAnnotations();
    String allocated = annotations.get(HamiAnnotations.DEVICES_ALLOCATED);
    String uid = created.getMetadata().getUid();
    assertThat(new GrantSignature(key).verifies(uid, "worker1", allocated, annotations.get(GrantSignature.ANNOTATION))).isTrue();
    // Bound to its pod: the same annotations on another pod do not verify.
    assertThat(new GrantSignature(key).verifies("another-uid", "worker1", allocated, annotations.get(GrantSignature.ANNOTATION))).isFalse();

    // A restart reuses the key.
    cluster.stop();
    cluster.start(SchedulerOptions.defaults().withGrantKeySecret("kube-system/hami-scheduler-grant-key"), DeviceConfig.DEFAULT);
    assertThat(secret.read()).contains(key);
  }

  @Test
  void withoutTheFlagNoSignatureIsWritten() throws Exception {
    cluster.start();
    Pod created = cluster.create(ExtenderTest.gpuPod("team-a", "p1", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096"), Map.of()));
    cluster.filter(created, List.of("worker1"));
    assertThat(client.pods().inNamespace("team-a").withName("p1").get().getMetadata().getAnnotations())
        .containsKey(HamiAnnotations.DEVICES_ALLOCATED)
        .doesNotContainKey(GrantSignature.ANNOTATION);
    assertThat(client.secrets().inAnyNamespace().list().getItems()).isEmpty();
  }

  @Test
  void aReservationGivenBackIsReservedAgainAtBindOnlyAsSigned() throws Exception {
    cluster.start(SchedulerOptions.defaults().withGrantKeySecret("kube-system/hami-scheduler-grant-key").withStaleReservationTimeout(java.time.Duration.ofMinutes(5)),
        DeviceConfig.DEFAULT);
    for (String name : List.of("kept", "edited")) {
      Pod created = cluster.create(ExtenderTest.gpuPod("team-a", name, Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
      assertThat(cluster.filter(created, List.of("worker1")).path("NodeNames").toString()).isEqualTo("[\"worker1\"]");
    }
    cluster.clock.advance(java.time.Duration.ofMinutes(6));
    cluster.server.sweepStaleReservations();
    assertThat(cluster.server.engine().grants()).isEmpty();
    // While nothing counts it, the owner widens its grant (no admission policy in this test cluster).
    client.pods().inNamespace("team-a").withName("edited").edit(p -> {
      p.getMetadata().getAnnotations().put(HamiAnnotations.DEVICES_ALLOCATED, p.getMetadata().getAnnotations().get(HamiAnnotations.DEVICES_ALLOCATED).replace(",1000,", ",40960,"));
      return p;
    });
    ClusterHarness.await(() -> cluster.server.ledger().pod(new PodRef("team-a", "edited"))
        .map(p -> p.getMetadata().getAnnotations().get(HamiAnnotations.DEVICES_ALLOCATED).contains(",40960,")).orElse(false), "the edit to reach the cache");

    assertThat(cluster.bind(new PodRef("team-a", "kept"), "worker1").path("Error").asString()).isEmpty();
    assertThat(cluster.bind(new PodRef("team-a", "edited"), "worker1").path("Error").asString())
        .isEqualTo("pod team-a/edited: its reservation was given back, and its grant is not the one this scheduler signed");
    assertThat(cluster.server.engine().grant(new PodRef("team-a", "edited"))).isEmpty();
  }
}
