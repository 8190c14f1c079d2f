package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.server.TestCertificates;
import io.vgpu.k8s.server.TestCertificates.Issued;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * The extender over real TLS with {@code --client-ca-file}: only a client certificate of that
 * authority (kube-scheduler's, through its extender tlsConfig) may filter or bind; the webhook and the
 * probes stay reachable without one.
 */
@EnableKubernetesMockClient(crud = true)
class ExtenderAuthTest {
  KubernetesClient client;
  ClusterHarness cluster;
  @TempDir Path dir;

  Issued serverCa;
  Issued kubeScheduler;
  Issued apiServer;
  Issued stranger;

  @BeforeEach
  void certificates() throws Exception {
    serverCa = TestCertificates.authority("vgpu-serving-ca");
    Issued serving = TestCertificates.issue(serverCa, "vgpu-scheduler", false);
    TestCertificates.write(serving, dir.resolve("tls.crt"), dir.resolve("tls.key"));
    Issued clientCa = TestCertificates.authority("kube-scheduler-client-ca");
    kubeScheduler = TestCertificates.issue(clientCa, "system:kube-scheduler", true);
    TestCertificates.writeBundle(dir.resolve("client-ca.crt"), clientCa.certificate());
    Issued apiServerCa = TestCertificates.authority("apiserver-client-ca");
    apiServer = TestCertificates.issue(apiServerCa, "kube-apiserver", true);
    TestCertificates.writeBundle(dir.resolve("webhook-ca.crt"), apiServerCa.certificate());
    stranger = TestCertificates.issue(TestCertificates.authority("rogue-ca"), "system:kube-scheduler", true);
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards("GPU-44444444-0000-0000-0000-0000000000", 2, 40960));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private void start(Optional<Path> webhookCa) throws IOException {
    cluster.start(
        SchedulerOptions.defaults()
            .withTls(dir.resolve("tls.crt"), dir.resolve("tls.key"))
            .withExtender("127.0.0.1:0", Optional.of(dir.resolve("client-ca.crt")), webhookCa),
        DeviceConfig.DEFAULT);
  }

  private HttpResponse<String> post(int port, String path, String body, @Nullable Issued as) throws Exception {
    SSLContext tls = TestCertificates.client(serverCa.certificate(), as);
    HttpClient http = HttpClient.newBuilder().sslContext(tls).version(HttpClient.Version.HTTP_1_1).build();
    return http.send(
        HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /**
   * Whether the request was refused: a client whose certificate the server's authorities did not sign
   * either sends none (the server lists the authorities it accepts: 401) or fails the handshake.
   */
  private boolean refused(int port, String path, String body, Issued as) throws Exception {
    try {
      int status = post(port, path, body, as).statusCode();
      return status == 401 || status == 403;
    } catch (IOException e) {
      return true;
    }
  }

  private String filterArgs(Pod pod) {
    var args = ClusterHarness.JSON.createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    args.putNull("Nodes");
    args.putArray("NodeNames").add("n1");
    return args.toString();
  }

  private static final String BIND = "{\"PodName\":\"a\",\"PodNamespace\":\"default\",\"PodUID\":\"\",\"Node\":\"n1\"}";

  @Test
  void filterAndBindAnswerOnlyKubeSchedulersCertificate() throws Exception {
    start(Optional.empty());
    Pod pod = cluster.create(ExtenderTest.gpuPod("default", "a", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    int port = cluster.server.extenderPort();

    for (String path : List.of("/filter", "/bind")) {
      HttpResponse<String> anonymous = post(port, path, path.equals("/bind") ? BIND : filterArgs(pod), null);
      assertThat(anonymous.statusCode()).as(path).isEqualTo(401);
      assertThat(anonymous.body()).isEqualTo(path + " requires a TLS client certificate\n");
      assertThat(refused(port, path, path.equals("/bind") ? BIND : filterArgs(pod), stranger)).as(path + " with a certificate of another authority").isTrue();
    }
    assertThat(cluster.server.engine().grants()).as("nothing was filtered").isEmpty();

    HttpResponse<String> filtered = post(port, "/filter", filterArgs(pod), kubeScheduler);
    assertThat(filtered.statusCode()).isEqualTo(200);
    assertThat(ClusterHarness.JSON.readTree(filtered.body()).path("NodeNames").toString()).isEqualTo("[\"n1\"]");
    HttpResponse<String> bound = post(port, "/bind", BIND, kubeScheduler);
    assertThat(bound.body()).isEqualTo("{\"Error\":\"\"}");
    assertThat(cluster.server.engine().grant(new PodRef("default", "a"))).isPresent();
  }

  @Test
  void theWebhookAndTheProbesNeedNoCertificateAndTheExtenderIsNotOnTheWebhooksListener() throws Exception {
    start(Optional.empty());
    String review = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"namespace\":\"default\","
        + "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";
    HttpResponse<String> admitted = post(cluster.server.port(), "/webhook", review, null);
    assertThat(admitted.statusCode()).isEqualTo(200);
    JsonNode response = ClusterHarness.JSON.readTree(admitted.body()).path("response");
    assertThat(response.path("allowed").asBoolean()).isTrue();
    assertThat(post(cluster.server.port(), "/filter", "{}", null).statusCode()).isEqualTo(404);
    assertThat(cluster.probe("/healthz").statusCode()).isEqualTo(200);
    assertThat(cluster.probe("/readyz").statusCode()).isEqualTo(200);
  }

  @Test
  void theWebhookMayRequireTheApiServersCertificate() throws Exception {
    start(Optional.of(dir.resolve("webhook-ca.crt")));
    String review = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"namespace\":\"default\","
        + "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";
    assertThat(post(cluster.server.port(), "/webhook", review, null).statusCode()).isEqualTo(401);
    assertThat(post(cluster.server.port(), "/webhook", review, apiServer).statusCode()).isEqualTo(200);
    // kube-scheduler's certificate is not the API server's.
    assertThat(refused(cluster.server.port(), "/webhook", review, kubeScheduler)).isTrue();
  }

  @Test
  void aClientCaNeedsTls() {
    assertThatThrownBy(() -> SchedulerOptions.defaults().withExtender("", Optional.of(dir.resolve("client-ca.crt")), Optional.empty()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--client-ca-file needs --cert_file and --key_file: client certificates are checked over TLS");
  }
}
