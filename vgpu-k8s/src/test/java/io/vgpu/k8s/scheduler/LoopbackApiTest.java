package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.k8s.server.TestCertificates;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoopbackApiTest {
  @Test
  void answersTheFourWritesAsAnApiServerAnswersASuccess() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      ApiWrites writes = new ApiWrites(api.client());

      writes.patchPodAsync(LoopbackApi.NAMESPACE, LoopbackApi.POD, "{\"metadata\":{\"annotations\":{\"a\":\"b\"}}}").join();
      writes.patchNode(LoopbackApi.NODE, NodeLock.lockPatch("7", "2026-01-01T00:00:00Z,warm-up,p"));
      writes.create(LoopbackApi.NAMESPACE, "bindings", "{\"kind\":\"Binding\"}");
      writes.create(LoopbackApi.NAMESPACE, "events", "{\"kind\":\"Event\"}");

      assertThat(api.writes()).isEqualTo(4);
    }
  }

  @Test
  void anythingElseIsNotFoundAndNotCounted() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      ApiWrites writes = new ApiWrites(api.client());

      assertThatThrownBy(() -> writes.patchPod("default", "someone-else", "{}"))
          .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(404));
      assertThat(api.writes()).isZero();
    }
  }

  @Test
  void itsClientReachesTheLoopbackOnlyAndCarriesNoCredentials() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      URI master = URI.create(api.client().getConfiguration().getMasterUrl());

      assertThat(master.getHost()).isIn("127.0.0.1", "localhost");
      assertThat(master.getScheme()).isEqualTo("http");
      assertThat(api.client().getConfiguration().getOauthToken()).isNull();
      assertThat(api.client().getConfiguration().getUsername()).isNull();
      assertThat(api.client().getConfiguration().getClientCertData()).isNull();
      assertThat(api.client().getConfiguration().getClientCertFile()).isNull();
    }
  }

  @Test
  void listsItsNodesAndSendsWatchEventsOverAWebSocketWatchWithTls(@TempDir Path dir) throws Exception {
    ReloadingKeyManager keys = TestCertificates.keyManager(dir, "vgpu-scheduler", TestCertificates.KeyFormat.PKCS1_RSA);
    String node = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"5\"}}";
    try (LoopbackApi api = LoopbackApi.start(keys, Map.of(LoopbackApi.NODES, List.of(node)))) {
      assertThat(URI.create(api.client().getConfiguration().getMasterUrl()).getScheme()).isEqualTo("https");
      assertThat(api.client().nodes().list().getItems()).extracting(n -> n.getMetadata().getName()).containsExactly("n1");
      assertThat(api.client().pods().inAnyNamespace().list().getItems()).isEmpty();

      BlockingQueue<String> seen = new LinkedBlockingQueue<>();
      try (var watch = api.client().nodes().withResourceVersion("1").watch(new Watcher<Node>() {
        @Override
        public void eventReceived(Action action, Node resource) {
          seen.add(action + " " + resource.getMetadata().getName());
        }

        @Override
        public void onClose(WatcherException cause) {}
      })) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (api.watching(LoopbackApi.NODES) == 0 && System.nanoTime() < deadline) {
          Thread.sleep(5);
        }
        assertThat(api.watching(LoopbackApi.NODES)).isEqualTo(1);
        api.emit(LoopbackApi.NODES, "{\"type\":\"MODIFIED\",\"object\":" + node.replace("n1", "n2") + "}");
        // Over 65,535 bytes: the frame's 64-bit length.
        String large = node.replace("n1", "n3").replace("\"resourceVersion\"", "\"labels\":{\"big\":\"" + "x".repeat(70_000) + "\"},\"resourceVersion\"");
        api.emit(LoopbackApi.NODES, "{\"type\":\"ADDED\",\"object\":" + large + "}");

        assertThat(seen.poll(10, TimeUnit.SECONDS)).isEqualTo("MODIFIED n2");
        assertThat(seen.poll(10, TimeUnit.SECONDS)).isEqualTo("ADDED n3");
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (api.watching(LoopbackApi.NODES) > 0 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      // The client's close frame was answered and the watch dropped.
      assertThat(api.watching(LoopbackApi.NODES)).isZero();
    }
  }

  @Test
  void aWatchWithoutAWebSocketUpgradeIsABadRequest() throws Exception {
    try (LoopbackApi api = LoopbackApi.start()) {
      HttpClient http = api.client().getHttpClient();
      HttpRequest request = http.newHttpRequestBuilder().uri(api.client().getConfiguration().getMasterUrl() + "api/v1/pods?watch=true").build();

      HttpResponse<String> response = http.sendAsync(request, String.class).get(10, TimeUnit.SECONDS);

      assertThat(response.code()).isEqualTo(400);
      assertThat(response.body()).contains("\"reason\":\"BadRequest\"").contains("WebSocket only");
      assertThat(api.writes()).isZero();
    }
  }
}
