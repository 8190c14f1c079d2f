package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.nvidia.HookLayout;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** {@code vgpu scheduler --stack kai} over real HTTP: the webhook for the pods KAI shares and the probes, nothing else. */
@EnableKubernetesMockClient(crud = true)
class KaiWebhookServerTest {
  KubernetesClient client;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

  private HttpResponse<String> post(int port, String path, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(int port, String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET().build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String review(String object) {
    return "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
        + "\"operation\":\"CREATE\",\"namespace\":\"team-a\",\"object\":" + object + "}}";
  }

  @Test
  void servesTheKaiMutationAndIsReadyWithoutLedgerOrLeadership() throws Exception {
    SchedulerOptions options = SchedulerOptions.defaults().withBinds("127.0.0.1:0", "127.0.0.1:0");
    try (KaiWebhookServer server = KaiWebhookServer.start(options, new HookLayout("/usr/local"), client, Clock.systemUTC())) {
      assertThat(get(server.metricsPort(), "/readyz").statusCode()).isEqualTo(200);
      HttpResponse<String> shared = post(server.port(), "/webhook",
          review("{\"metadata\":{\"name\":\"p\",\"annotations\":{\"gpu-memory\":\"20480\"}},\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"x\"}]}}"));
      assertThat(shared.statusCode()).isEqualTo(200);
      assertThat(shared.body()).startsWith("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"patchType\":\"JSONPatch\",\"patch\":\"");
      String marker = "\"patch\":\"";
      int start = shared.body().indexOf(marker) + marker.length();
      String patch = new String(Base64.getDecoder().decode(shared.body().substring(start, shared.body().indexOf('"', start))), StandardCharsets.UTF_8);
      assertThat(patch).startsWith("[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"VGPU_POD_UID\"");

      HttpResponse<String> denied = post(server.port(), "/webhook",
          review("{\"metadata\":{\"name\":\"p\",\"annotations\":{\"gpu-fraction\":\"0.5\",\"gpu-fraction-container-name\":\"x\"}},\"spec\":{\"containers\":[{\"name\":\"main\"}]}}"));
      assertThat(denied.body()).isEqualTo("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":false,"
          + "\"status\":{\"code\":403,\"message\":\"pod annotation gpu-fraction-container-name: 'x' names no init container or container of the pod\"}}}");

      // A whole-card pod KAI placed itself: allowed, no patch, no nodeName rule.
      HttpResponse<String> whole = post(server.port(), "/webhook",
          review("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"main\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}"));
      assertThat(whole.body()).isEqualTo("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true}}");

      // No extender in this stack.
      assertThat(post(server.port(), "/filter", "{}").statusCode()).isEqualTo(404);
    }
  }
}
