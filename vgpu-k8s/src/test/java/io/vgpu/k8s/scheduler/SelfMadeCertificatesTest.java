package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;

import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.vgpu.k8s.cli.Vgpu;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.server.PemCredentials;
import io.vgpu.k8s.server.TestCertificates;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chart's scheme without cert-manager, end to end: {@code vgpu certificates} (the scheduler pod's
 * init container) against an API server, then the scheduler started with the files it wrote. The API
 * server, trusting only the caBundle written into the webhook configuration, reaches /webhook with
 * the host name checked; kube-scheduler's client certificate opens /filter, and nothing else does.
 */
@EnableKubernetesMockClient(crud = true)
class SelfMadeCertificatesTest {
  KubernetesClient client;
  KubernetesMockServer server;
  @TempDir Path dir;
  ClusterHarness cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void theInitStepsCertificatesServeTheWebhookAndAdmitOnlyKubeScheduler() throws Exception {
    server.expect().get().withPath("/version").andReturn(200, "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.0\"}").always();
    client.admissionRegistration().v1().mutatingWebhookConfigurations().resource(new MutatingWebhookConfigurationBuilder()
        .withNewMetadata().withName("hami-webhook").endMetadata()
        .addNewWebhook().withName("vgpu.hami.io").withAdmissionReviewVersions("v1").withSideEffects("None")
        .withNewClientConfig().withNewService().withName("hami-scheduler").withNamespace("kube-system").withPath("/webhook").endService().endClientConfig()
        .endWebhook()
        .build()).create();
    Path kubeconfig = dir.resolve("kubeconfig");
    Files.writeString(kubeconfig, """
        apiVersion: v1
        kind: Config
        clusters: [{name: mock, cluster: {server: "%s", insecure-skip-tls-verify: true}}]
        users: [{name: u, user: {token: t}}]
        contexts: [{name: mock, context: {cluster: mock, user: u}}]
        current-context: mock
        """.formatted(client.getMasterUrl()));
    Path clientDir = dir.resolve("client-tls");
    Path servingDir = dir.resolve("tls");

    StringWriter err = new StringWriter();
    int code = Vgpu.run(new String[] {
        "certificates", "--client-dir=" + clientDir, "--serving-dir=" + servingDir, "--secret=hami-scheduler-tls", "--namespace=kube-system",
        "--dns-name=hami-scheduler.kube-system.svc", "--ip-address=127.0.0.1", "--webhook=hami-webhook", "--kubeconfig=" + kubeconfig},
        new PrintWriter(new StringWriter()), new PrintWriter(err));
    assertThat(code).as(err.toString()).isZero();
    assertThat(Files.getPosixFilePermissions(clientDir.resolve("tls.key"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(Files.getPosixFilePermissions(servingDir.resolve("tls.key"))).isEqualTo(PosixFilePermissions.fromString("rw-------"));
    assertThat(client.secrets().inNamespace("kube-system").withName("hami-scheduler-tls").get().getData()).containsKeys("ca.crt", "ca.key", "tls.crt", "tls.key");

    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards("GPU-55555555-0000-0000-0000-0000000000", 1, 40960));
    cluster.start(
        SchedulerOptions.defaults()
            .withTls(servingDir.resolve("tls.crt"), servingDir.resolve("tls.key"))
            .withExtender("127.0.0.1:0", Optional.of(clientDir.resolve("ca.crt")), Optional.empty()),
        DeviceConfig.DEFAULT);

    String caBundle = client.admissionRegistration().v1().mutatingWebhookConfigurations().withName("hami-webhook").get().getWebhooks().get(0).getClientConfig().getCaBundle();
    X509Certificate apiServerTrust = PemCredentials.certificates(new String(Base64.getDecoder().decode(caBundle), StandardCharsets.US_ASCII), "caBundle").get(0);
    String review = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\",\"namespace\":\"default\","
        + "\"object\":{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}}";
    assertThat(post(cluster.server.port(), "/webhook", review, apiServerTrust, null).statusCode()).isEqualTo(200);

    X509Certificate kubeSchedulerTrust = PemCredentials.certificates(Files.readString(servingDir.resolve("ca.crt")), "ca.crt").get(0);
    PemCredentials kubeScheduler = PemCredentials.read(clientDir.resolve("tls.crt"), clientDir.resolve("tls.key"));
    Pod pod = cluster.create(ExtenderTest.gpuPod("default", "a", Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), Map.of()));
    var args = ClusterHarness.JSON.createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    args.putNull("Nodes");
    args.putArray("NodeNames").add("n1");
    int extender = cluster.server.extenderPort();
    assertThat(post(extender, "/filter", args.toString(), kubeSchedulerTrust, null).statusCode()).isEqualTo(401);
    HttpResponse<String> filtered = post(extender, "/filter", args.toString(), kubeSchedulerTrust, kubeScheduler);
    assertThat(filtered.statusCode()).isEqualTo(200);
    assertThat(ClusterHarness.JSON.readTree(filtered.body()).path("NodeNames").toString()).isEqualTo("[\"n1\"]");
  }

  private static HttpResponse<String> post(int port, String path, String body, X509Certificate trust, @Nullable PemCredentials as) throws Exception {
    X509Certificate leaf = as == null ? null : as.chain().get(0);
    SSLContext tls = TestCertificates.client(trust, as == null ? null : new TestCertificates.Issued(leaf, new KeyPair(leaf.getPublicKey(), as.key())));
    HttpClient http = HttpClient.newBuilder().sslContext(tls).version(HttpClient.Version.HTTP_1_1).build();
    return http.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
