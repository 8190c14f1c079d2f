package io.vgpu.k8s.certificates;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.k8s.server.PemCredentials;
import java.nio.charset.StandardCharsets;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The serving certificate kept in a Secret: made once, reused, renewed by the same CA, foreign ones replaced. */
@EnableKubernetesMockClient(crud = true)
class ServingSecretTest {
  KubernetesClient client;

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final List<String> DNS = List.of("hami-scheduler.kube-system.svc", "hami-scheduler.kube-system.svc.cluster.local");
  private static final List<String> IPS = List.of("127.0.0.1");

  private ServingSecret secretAt(Instant now) {
    return new ServingSecret(client, "kube-system", "hami-scheduler-tls", Clock.fixed(now, ZoneOffset.UTC));
  }

  private Secret stored() {
    return client.secrets().inNamespace("kube-system").withName("hami-scheduler-tls").get();
  }

  private static String decoded(Secret secret, String key) {
    return new String(Base64.getDecoder().decode(secret.getData().get(key)), StandardCharsets.US_ASCII);
  }

  private static List<String> subjectAlternativeNames(X509Certificate certificate) throws Exception {
    List<String> names = new ArrayList<>();
    for (List<?> entry : certificate.getSubjectAlternativeNames()) {
      names.add(String.valueOf(entry.get(1)));
    }
    return names;
  }

  @Test
  void theFirstPodMakesTheCaAndCertificateAndStoresThemAsATlsSecret() throws Exception {
    ServingSecret.Material made = secretAt(T0).ensure(DNS, IPS);

    Secret secret = stored();
    assertThat(secret.getType()).isEqualTo("kubernetes.io/tls");
    assertThat(secret.getData()).containsOnlyKeys("ca.crt", "ca.key", "tls.crt", "tls.key");
    PemCredentials serving = PemCredentials.parse(decoded(secret, "tls.crt"), "tls.crt", decoded(secret, "tls.key"), "tls.key");
    X509Certificate ca = PemCredentials.certificates(decoded(secret, "ca.crt"), "ca.crt").get(0);
    serving.chain().get(0).verify(ca.getPublicKey());
    assertThat(serving.chain().get(0)).isEqualTo(made.serving().certificate());
    assertThat(subjectAlternativeNames(serving.chain().get(0))).containsExactly("hami-scheduler.kube-system.svc", "hami-scheduler.kube-system.svc.cluster.local", "127.0.0.1");
    assertThat(serving.chain().get(0).getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1"); // serverAuth only
    assertThat(ca.getBasicConstraints()).isEqualTo(0);
    assertThat(serving.chain().get(0).getNotAfter().toInstant()).isEqualTo(T0.plus(ServingSecret.CERTIFICATE_VALIDITY));
  }

  @Test
  void laterPodsServeTheStoredCertificate() throws Exception {
    ServingSecret.Material first = secretAt(T0).ensure(DNS, IPS);
    String version = stored().getMetadata().getResourceVersion();

    ServingSecret.Material second = secretAt(T0.plus(Duration.ofDays(30))).ensure(DNS, IPS);

    assertThat(second.serving().certificate()).isEqualTo(first.serving().certificate());
    assertThat(second.ca().certificate()).isEqualTo(first.ca().certificate());
    assertThat(stored().getMetadata().getResourceVersion()).as("not written again").isEqualTo(version);
  }

  @Test
  void aCertificateNearItsEndOrMissingANameIsReissuedByTheSameCa() throws Exception {
    ServingSecret.Material first = secretAt(T0).ensure(DNS, IPS);

    Instant late = T0.plus(ServingSecret.CERTIFICATE_VALIDITY).minus(Duration.ofDays(100));
    ServingSecret.Material renewed = secretAt(late).ensure(DNS, IPS);
    assertThat(renewed.serving().certificate()).isNotEqualTo(first.serving().certificate());
    assertThat(renewed.ca().certificate()).as("the webhook's caBundle stays right").isEqualTo(first.ca().certificate());
    renewed.serving().certificate().verify(first.ca().certificate().getPublicKey());

    List<String> more = new ArrayList<>(DNS);
    more.add("gpu.example.com");
    ServingSecret.Material widened = secretAt(late).ensure(more, IPS);
    assertThat(subjectAlternativeNames(widened.serving().certificate())).contains("gpu.example.com");
    assertThat(widened.ca().certificate()).isEqualTo(first.ca().certificate());
  }

  @Test
  void aCaNearItsEndIsReplacedWithItsCertificate() throws Exception {
    ServingSecret.Material first = secretAt(T0).ensure(DNS, IPS);
    Instant late = T0.plus(ServingSecret.CA_VALIDITY).minus(Duration.ofDays(30));

    ServingSecret.Material renewed = secretAt(late).ensure(DNS, IPS);

    assertThat(renewed.ca().certificate()).isNotEqualTo(first.ca().certificate());
    renewed.serving().certificate().verify(renewed.ca().certificate().getPublicKey());
  }

  @Test
  void hamisCertgenSecretIsReplaced() throws Exception {
    client.secrets().inNamespace("kube-system").resource(new SecretBuilder()
        .withNewMetadata().withName("hami-scheduler-tls").withNamespace("kube-system").endMetadata()
        .withData(Map.of("ca", "Y2E=", "cert", "Y2VydA==", "key", "a2V5"))
        .build()).create();

    ServingSecret.Material made = secretAt(T0).ensure(DNS, IPS);

    Secret secret = stored();
    assertThat(secret.getData()).containsOnlyKeys("ca.crt", "ca.key", "tls.crt", "tls.key");
    assertThat(decoded(secret, "tls.crt")).isEqualTo(made.serving().certificatePem());
  }

  @Test
  void aCertificateNotSignedByTheStoredCaIsReplaced() throws Exception {
    secretAt(T0).ensure(DNS, IPS);
    CertificateIssuer.Issued otherCa = CertificateIssuer.authority("other", T0, Duration.ofDays(3650));
    CertificateIssuer.Issued foreign = CertificateIssuer.server(otherCa, DNS, IPS, T0, Duration.ofDays(1000));
    Secret secret = stored();
    secret.getData().put("tls.crt", Base64.getEncoder().encodeToString(foreign.certificatePem().getBytes(StandardCharsets.US_ASCII)));
    secret.getData().put("tls.key", Base64.getEncoder().encodeToString(foreign.keyPem().getBytes(StandardCharsets.US_ASCII)));
    client.secrets().inNamespace("kube-system").resource(secret).update();

    ServingSecret.Material made = secretAt(T0).ensure(DNS, IPS);

    made.serving().certificate().verify(made.ca().certificate().getPublicKey());
    assertThat(made.serving().certificate()).isNotEqualTo(foreign.certificate());
  }
}
