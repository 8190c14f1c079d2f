package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ListMetaBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodListBuilder;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.vgpu.api.ResourceSchema;
import java.net.HttpURLConnection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The ledger's informer client handles watch events on the thread that receives them ({@link
 * LeanDecoding#client}); a watch the API server ends still gives way to a fresh list and a new watch,
 * and every event reaches the handler once, in order.
 */
@EnableKubernetesMockClient
class LeanWatchTest {
  private static final String LIST = "/api/v1/namespaces/ns/pods?limit=500";
  private static final String WATCH = "/api/v1/namespaces/ns/pods?allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=600&watch=true";

  KubernetesMockServer server;
  KubernetesClient client;

  private static Pod pod(String name, String resourceVersion) {
    return new PodBuilder().withNewMetadata().withName(name).withNamespace("ns").withUid("uid-" + name).withResourceVersion(resourceVersion).endMetadata().build();
  }

  /** What the API server sends when a watch's resource version is too old: the watch must start again from a list. */
  private static WatchEvent expired() {
    return new WatchEvent(new StatusBuilder().withCode(HttpURLConnection.HTTP_GONE).withReason("Expired").withMessage("too old resource version: 2 (5)").build(), "ERROR");
  }

  @Test
  void aWatchTheServerEndsIsListedAndWatchedAgain() {
    server.expect().get().withPath(LIST).andReturn(200, new PodListBuilder().withMetadata(new ListMetaBuilder().withResourceVersion("1").build()).addToItems(pod("a", "1")).build()).once();
    server.expect().get().withPath(LIST)
        .andReturn(200, new PodListBuilder().withMetadata(new ListMetaBuilder().withResourceVersion("5").build()).addToItems(pod("a", "1"), pod("b", "2"), pod("c", "5")).build())
        .once();
    server.expect().withPath(String.format(WATCH, "1")).andUpgradeToWebSocket().open()
        .waitFor(50).andEmit(new WatchEvent(pod("b", "2"), "ADDED"))
        .waitFor(50).andEmit(expired())
        .done().once();
    server.expect().withPath(String.format(WATCH, "5")).andUpgradeToWebSocket().open()
        .waitFor(50).andEmit(new WatchEvent(pod("d", "6"), "ADDED"))
        .waitFor(50).andEmit(new WatchEvent(pod("a", "7"), "MODIFIED"))
        .done().always();

    List<String> seen = new CopyOnWriteArrayList<>();
    Set<String> threads = ConcurrentHashMap.newKeySet();
    KubernetesClient lean = LeanDecoding.client(client, LeanReader.forCache(LeanStore.podResources(ResourceSchema.nvidia()), (key, annotation, length) -> {}));
    try (lean) {
      SharedIndexInformer<Pod> informer = lean.pods().inNamespace("ns").withLimit(500L).runnableInformer(0);
      informer.addEventHandler(new ResourceEventHandler<>() {
        @Override
        public void onAdd(Pod pod) {
          threads.add(Thread.currentThread().getName());
          seen.add("add " + pod.getMetadata().getName());
        }

        @Override
        public void onUpdate(Pod old, Pod pod) {
          threads.add(Thread.currentThread().getName());
          seen.add("update " + pod.getMetadata().getName() + "@" + pod.getMetadata().getResourceVersion());
        }

        @Override
        public void onDelete(Pod pod, boolean finalStateUnknown) {
          threads.add(Thread.currentThread().getName());
          seen.add("delete " + pod.getMetadata().getName());
        }
      });
      informer.start().toCompletableFuture().join();
      ClusterHarness.await(() -> seen.contains("update a@7"), "the second watch's events");
      assertThat(seen).containsExactly("add a", "add b", "add c", "add d", "update a@7");
      // fabric8's own task pool (threads named …pool-N-thread-M) would cost two wake-ups per event.
      assertThat(threads).noneMatch(name -> name.matches(".*pool-\\d+-thread-\\d+"));
      assertThat(informer.getStore().list()).extracting(p -> p.getMetadata().getName()).containsExactlyInAnyOrder("a", "b", "c", "d");
    }
  }
}
