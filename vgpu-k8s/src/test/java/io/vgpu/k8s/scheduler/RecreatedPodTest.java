package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodJson;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A StatefulSet pod recreated under the same name: the informer may deliver the old pod's DELETE after
 * kube-scheduler has already asked the extender to place the new one. Grants belong to a pod's UID,
 * and only an event of that UID gives one back.
 */
@EnableKubernetesMockClient(crud = true)
class RecreatedPodTest {
  static final String CARDS = "GPU-77777777-0000-0000-0000-0000000000";
  static final PodRef WEB0 = new PodRef("db", "web-0");

  KubernetesClient client;
  KubernetesClient schedulerClient;
  ClusterHarness cluster;
  final SteppedExecutor informerWork = new SteppedExecutor();

  @BeforeEach
  void start() throws Exception {
    schedulerClient = new KubernetesClientBuilder().withConfig(client.getConfiguration()).withTaskExecutor(informerWork).build();
    cluster = new ClusterHarness(schedulerClient);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards(CARDS, 1, 40960));
    cluster.start();
  }

  @AfterEach
  void stop() {
    cluster.close();
    schedulerClient.close();
    informerWork.close();
  }

  private Pod web0(String uid) {
    Pod pod = ExtenderTest.gpuPod(WEB0.namespace(), WEB0.name(), Map.of("nvidia.com/gpu", "1"), Map.of());
    pod.getMetadata().setUid(uid);
    return client.pods().inNamespace(WEB0.namespace()).resource(pod).create();
  }

  private JsonNode filter(Pod pod) throws Exception {
    ObjectNode args = ClusterHarness.JSON.createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    args.putNull("Nodes");
    args.putArray("NodeNames").add("n1");
    return ClusterHarness.JSON.readTree(cluster.post("/filter", args.toString()).body());
  }

  @Test
  void theOldPodsLateDeleteLeavesTheNewPodsReservationCounted() throws Exception {
    Pod old = web0("uid-old");
    assertThat(cluster.schedule(old, List.of("n1"))).contains("n1");
    ClusterHarness.await(() -> cluster.server.engine().grant(WEB0).isPresent(), "the old pod's grant");

    // The old pod goes and its successor comes while the scheduler's informer lags behind.
    informerWork.hold();
    client.pods().inNamespace(WEB0.namespace()).withName(WEB0.name()).delete();
    ClusterHarness.await(() -> client.pods().inNamespace(WEB0.namespace()).withName(WEB0.name()).get() == null, "the old pod gone");
    Pod fresh = web0("uid-new");
    assertThat(fresh.getMetadata().getUid()).isNotEqualTo(old.getMetadata().getUid());
    JsonNode filtered = filter(fresh);
    assertThat(filtered.path("NodeNames").toString()).as(filtered.toString()).isEqualTo("[\"n1\"]");
    informerWork.release();
    ClusterHarness.await(() -> {
      Pod seen = cluster.server.ledger().pod(WEB0).orElse(null);
      return seen != null && fresh.getMetadata().getUid().equals(seen.getMetadata().getUid()) && seen.getMetadata().getAnnotations() != null
          && seen.getMetadata().getAnnotations().containsKey(HamiAnnotations.DEVICES_ALLOCATED);
    }, "the informer to catch up");
    Thread.sleep(200);

    assertThat(cluster.server.engine().grant(WEB0)).as("the new pod's reservation").isPresent();
    // The card is the new pod's: another whole-card pod finds no room.
    Pod other = cluster.create(ExtenderTest.gpuPod("db", "other", Map.of("nvidia.com/gpu", "1"), Map.of()));
    assertThat(cluster.filter(other, List.of("n1")).path("NodeNames").isNull()).isTrue();
  }
}
