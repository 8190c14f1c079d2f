package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodJson;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A StatefulSet pod recreated under the same name: the informer may deliver the old pod's DELETE after
 * kube-scheduler has already asked the extender to place the new one. Grants belong to a pod's UID,
 * and only an event of that UID gives one back. The ledger is made to lag by holding its pod watch in a
 * handler of its own ({@link WatchHold}): the events behind the held one wait, as behind a slow watch.
 */
@EnableKubernetesMockClient(crud = true)
class RecreatedPodTest {
  static final String CARDS = "GPU-77777777-0000-0000-0000-0000000000";
  static final PodRef WEB0 = new PodRef("db", "web-0");
  static final PodRef MARKER = new PodRef("db", "marker");

  KubernetesClient client;
  ClusterHarness cluster;
  final WatchHold hold = new WatchHold();

  @BeforeEach
  void start() throws Exception {
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards(CARDS, 1, 40960));
    cluster.start();
  }

  @AfterEach
  void stop() {
    hold.release();
    cluster.close();
  }

  /** Stops the pod watch's thread at the marker pod's first update after it is added, until released. */
  static final class WatchHold implements ResourceEventHandler<Pod> {
    final CountDownLatch held = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);

    @Override
    public void onAdd(Pod pod) {}

    @Override
    public void onUpdate(Pod old, Pod pod) {
      if (MARKER.name().equals(pod.getMetadata().getName()) && held.getCount() > 0) {
        held.countDown();
        try {
          released.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {}

    void release() {
      released.countDown();
    }
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
    client.pods().inNamespace(MARKER.namespace()).resource(ExtenderTest.gpuPod(MARKER.namespace(), MARKER.name(), Map.of(), Map.of())).create();
    ClusterHarness.await(() -> cluster.server.ledger().pod(MARKER).isPresent(), "the marker pod in the ledger");
    cluster.server.ledger().addPodEventHandler(hold);
    client.pods().inNamespace(MARKER.namespace()).withName(MARKER.name()).edit(p -> {
      p.getMetadata().setLabels(Map.of("step", "hold"));
      return p;
    });
    assertThat(hold.held.await(10, TimeUnit.SECONDS)).as("the pod watch held at the marker's update").isTrue();
    client.pods().inNamespace(WEB0.namespace()).withName(WEB0.name()).delete();
    ClusterHarness.await(() -> client.pods().inNamespace(WEB0.namespace()).withName(WEB0.name()).get() == null, "the old pod gone");
    Pod fresh = web0("uid-new");
    assertThat(fresh.getMetadata().getUid()).isNotEqualTo(old.getMetadata().getUid());
    JsonNode filtered = filter(fresh);
    assertThat(filtered.path("NodeNames").toString()).as(filtered.toString()).isEqualTo("[\"n1\"]");
    assertThat(cluster.server.ledger().pod(WEB0).map(p -> p.getMetadata().getUid())).as("the ledger still lags: the old pod").contains(old.getMetadata().getUid());
    hold.release();
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
