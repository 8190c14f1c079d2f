package io.vgpu.k8s.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.server.ClientCertificateAuthority;
import io.vgpu.k8s.server.PemCredentials;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code vgpu certificates}: kube-scheduler's client certificate needs no API server; bad flags are one line. */
class CertificatesCommandTest {
  @TempDir Path dir;

  @Test
  void theClientCertificateIsSignedByTheCaItWritesBesideIt() throws Exception {
    Run run = Run.vgpu("certificates", "--client-dir", dir.resolve("client").toString());

    assertThat(run.code()).as(run.err()).isZero();
    PemCredentials client = PemCredentials.read(dir.resolve("client/tls.crt"), dir.resolve("client/tls.key"));
    X509Certificate leaf = client.chain().get(0);
    assertThat(leaf.getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.2"); // clientAuth only
    assertThat(ClientCertificateAuthority.read("--client-ca-file", dir.resolve("client/ca.crt")).trusts(new X509Certificate[] {leaf})).isTrue();
    try (var files = Files.list(dir.resolve("client"))) {
      assertThat(files.map(p -> p.getFileName().toString())).as("the CA's key is never written").containsExactlyInAnyOrder("ca.crt", "tls.crt", "tls.key");
    }

    Run again = Run.vgpu("certificates", "--client-dir", dir.resolve("client").toString());
    assertThat(again.code()).isZero();
    X509Certificate next = PemCredentials.read(dir.resolve("client/tls.crt"), dir.resolve("client/tls.key")).chain().get(0);
    assertThat(ClientCertificateAuthority.read("--client-ca-file", dir.resolve("client/ca.crt")).trusts(new X509Certificate[] {leaf}))
        .as("each pod start makes a CA of its own").isFalse();
    assertThat(next).isNotEqualTo(leaf);
  }

  @Test
  void flagsThatNeedOthersAreOneLine() {
    String client = "--client-dir=" + dir.resolve("c");
    assertThat(Run.vgpu("certificates", client, "--secret=s")).isEqualTo(new Run(2, "", "vgpu: --secret, --webhook, --dns-name and --ip-address need --serving-dir\n"));
    assertThat(Run.vgpu("certificates", client, "--serving-dir=" + dir.resolve("s"), "--dns-name=x")).isEqualTo(new Run(2, "", "vgpu: --serving-dir needs --secret\n"));
    assertThat(Run.vgpu("certificates", client, "--serving-dir=" + dir.resolve("s"), "--secret=s"))
        .isEqualTo(new Run(2, "", "vgpu: --serving-dir needs at least one --dns-name or --ip-address\n"));
    assertThat(Run.vgpu("certificates", client, "--serving-dir=" + dir.resolve("s"), "--secret=s", "--ip-address=svc.local"))
        .isEqualTo(new Run(2, "", "vgpu: --ip-address 'svc.local' is not an IP address\n"));
    assertThat(Run.vgpu("certificates").err()).startsWith("vgpu: Missing required option: '--client-dir=<clientDirectory>'");
  }
}
