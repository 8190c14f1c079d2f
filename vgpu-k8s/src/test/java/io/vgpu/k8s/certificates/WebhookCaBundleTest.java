package io.vgpu.k8s.certificates;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhook;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfiguration;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.MutatingWebhookConfigurationBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** The serving CA reaches every webhook's caBundle, once. */
@EnableKubernetesMockClient(crud = true)
class WebhookCaBundleTest {
  KubernetesClient client;

  private static MutatingWebhook webhook(String name) {
    return new MutatingWebhookBuilder()
        .withName(name)
        .withAdmissionReviewVersions("v1")
        .withSideEffects("None")
        .withNewClientConfig()
        .withNewService().withName("hami-scheduler").withNamespace("kube-system").withPath("/webhook").withPort(443).endService()
        .endClientConfig()
        .build();
  }

  private MutatingWebhookConfiguration stored() {
    return client.admissionRegistration().v1().mutatingWebhookConfigurations().withName("hami-webhook").get();
  }

  @Test
  void everyWebhookGetsTheCaOnce() throws Exception {
    client.admissionRegistration().v1().mutatingWebhookConfigurations().resource(new MutatingWebhookConfigurationBuilder()
        .withNewMetadata().withName("hami-webhook").endMetadata()
        .withWebhooks(webhook("vgpu.hami.io"), webhook("other.hami.io"))
        .build()).create();
    String ca = CertificateIssuer.authority("ca", Instant.now(), Duration.ofDays(1)).certificatePem();
    WebhookCaBundle bundle = new WebhookCaBundle(client, "hami-webhook");

    assertThat(bundle.ensure(ca, Duration.ZERO, Duration.ofMillis(10))).isTrue();

    String expected = Base64.getEncoder().encodeToString(ca.getBytes(StandardCharsets.US_ASCII));
    assertThat(stored().getWebhooks()).extracting(w -> w.getClientConfig().getCaBundle()).containsExactly(expected, expected);
    assertThat(stored().getWebhooks().get(0).getClientConfig().getService().getPath()).as("the rest stays").isEqualTo("/webhook");
    assertThat(bundle.ensure(ca, Duration.ZERO, Duration.ofMillis(10))).as("already there: no patch").isFalse();
  }

  @Test
  void aMissingConfigurationIsWaitedForThenReported() {
    WebhookCaBundle bundle = new WebhookCaBundle(client, "hami-webhook");
    assertThatThrownBy(() -> bundle.ensure("pem", Duration.ofMillis(50), Duration.ofMillis(10)))
        .isInstanceOf(IOException.class)
        .hasMessage("MutatingWebhookConfiguration hami-webhook does not exist (waited 0 s)");
  }
}
