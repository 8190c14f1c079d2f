package io.vgpu.k8s.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.certificates.CertificateIssuer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * cert-manager renews the extender's and webhook's serving certificate while kube-scheduler keeps the
 * {@code ca.crt} it read once at start. The chart has a CA of its own sign the serving certificate, so a
 * renewed certificate (with a new key, as cert-manager makes it) still chains to what the client read.
 * The control is what the chart did before: a self-signed serving certificate is its own {@code ca.crt},
 * and the client that trusted the first one refuses the renewed one.
 */
class ServingCertificateRenewalTest {
  private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
  private static final List<String> DNS = List.of("hami-scheduler.kube-system.svc", "hami-scheduler.kube-system.svc.cluster.local");
  private static final List<String> IPS = List.of("127.0.0.1");

  @TempDir Path dir;

  private Path cert() {
    return dir.resolve("tls.crt");
  }

  private Path key() {
    return dir.resolve("tls.key");
  }

  /** Writes a serving certificate and the CA as cert-manager writes its Secret's files, modified at {@code modified}. */
  private void serve(CertificateIssuer.Issued serving, String caPem, Instant modified) throws Exception {
    Files.writeString(cert(), serving.certificatePem());
    Files.writeString(key(), serving.keyPem());
    Files.writeString(dir.resolve("ca.crt"), caPem);
    touch(modified);
  }

  private void touch(Instant modified) throws Exception {
    Files.setLastModifiedTime(cert(), FileTime.from(modified));
    Files.setLastModifiedTime(key(), FileTime.from(modified));
  }

  private static HttpService server(ReloadingKeyManager keys) throws Exception {
    return HttpService.builder(LOOPBACK).tls(keys).route("GET", "/healthz", r -> HttpService.Response.text(200, "ok")).start();
  }

  /**
   * The certificate the server presents to a client trusting exactly {@code trusted}, on a new connection
   * (a new context each time, so no TLS session is resumed past the server's new certificate).
   */
  private static X509Certificate presented(X509Certificate trusted, HttpService server) throws Exception {
    HttpClient client = HttpClient.newBuilder().sslContext(TestCertificates.trusting(trusted)).build();
    HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.port() + "/healthz")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(response.body()).isEqualTo("ok");
    return (X509Certificate) response.sslSession().orElseThrow().getPeerCertificates()[0];
  }

  @Test
  void aClientThatReadTheCaOnceVerifiesTheRenewedServingCertificate() throws Exception {
    Instant start = Instant.now();
    CertificateIssuer.Issued ca = CertificateIssuer.authority("hami-scheduler-ca", start, Duration.ofDays(3650));
    CertificateIssuer.Issued first = CertificateIssuer.server(ca, DNS, IPS, start, Duration.ofDays(90));
    serve(first, ca.certificatePem(), start);
    // kube-scheduler reads the CA file once, when it starts.
    X509Certificate trusted = PemCredentials.certificates(Files.readString(dir.resolve("ca.crt")), "ca.crt").get(0);
    try (HttpService server = server(new ReloadingKeyManager(cert(), key(), Duration.ZERO, Clock.systemUTC()))) {
      assertThat(presented(trusted, server)).isEqualTo(first.certificate());

      // Renewal: a new key and certificate from the same CA; the CA file is rewritten unchanged.
      CertificateIssuer.Issued renewed = CertificateIssuer.server(ca, DNS, IPS, Instant.now(), Duration.ofDays(90));
      assertThat(renewed.certificate().getPublicKey()).isNotEqualTo(first.certificate().getPublicKey());
      serve(renewed, ca.certificatePem(), start.plusSeconds(60));
      assertThat(presented(trusted, server)).isEqualTo(renewed.certificate());
    }
  }

  @Test
  void aSelfSignedServingCertificateIsItsOwnCaAndItsRenewalIsRefused() throws Exception {
    // The chart before: cert-manager's self-signed Issuer made the serving certificate, whose Secret's
    // ca.crt was that certificate itself.
    X509Certificate first = TestCertificates.write(cert(), key(), "hami-scheduler.kube-system.svc", TestCertificates.KeyFormat.SEC1_EC);
    X509Certificate trusted = first;
    try (HttpService server = server(new ReloadingKeyManager(cert(), key(), Duration.ZERO, Clock.systemUTC()))) {
      assertThat(presented(trusted, server)).isEqualTo(first);

      X509Certificate renewed = TestCertificates.write(cert(), key(), "hami-scheduler.kube-system.svc", TestCertificates.KeyFormat.SEC1_EC);
      touch(Instant.now().plusSeconds(60));
      // Same name, new key: the renewed certificate is not signed by the key the client trusts.
      assertThatThrownBy(() -> presented(trusted, server)).isInstanceOf(SSLHandshakeException.class).hasMessageContaining("signature check failed");
      // The server does serve the renewed certificate: a client that trusts it is answered.
      assertThat(presented(renewed, server)).isEqualTo(renewed);
    }
  }
}
