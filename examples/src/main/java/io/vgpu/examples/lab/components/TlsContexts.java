package io.vgpu.examples.lab.components;

import io.vgpu.k8s.server.PemCredentials;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS client contexts from what a deployment gives its clients: the CA files or {@code caBundle} they
 * trust and, for kube-scheduler, the client certificate it presents. PEM parsing is vgpu-k8s's own
 * ({@link PemCredentials}), the one the servers use.
 */
public final class TlsContexts {
  private static final char[] STORE_PASSWORD = "vgpu-lab".toCharArray();

  private TlsContexts() {}

  /**
   * A client context trusting {@code trusted} and presenting {@code client} when given.
   *
   * @throws IOException when a certificate or key cannot be read
   */
  public static SSLContext client(List<X509Certificate> trusted, Optional<PemCredentials> client) throws IOException {
    try {
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      for (int i = 0; i < trusted.size(); i++) {
        trust.setCertificateEntry("ca-" + i, trusted.get(i));
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      KeyManagerFactory kmf = null;
      if (client.isPresent()) {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        keys.setKeyEntry("client", client.get().key(), STORE_PASSWORD, client.get().chain().toArray(Certificate[]::new));
        kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, STORE_PASSWORD);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), new SecureRandom());
      return context;
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot build a TLS context: " + e.getMessage(), e);
    }
  }

  /** The certificates of a PEM file. */
  public static List<X509Certificate> certificates(Path pemFile) throws IOException {
    return PemCredentials.certificates(Files.readString(pemFile), pemFile.toString());
  }

  /** The certificates of a {@code caBundle} (base64 of PEM, as admission webhooks carry it). */
  public static List<X509Certificate> caBundle(String base64, String source) throws IOException {
    if (base64.isEmpty()) {
      return List.of();
    }
    return PemCredentials.certificates(new String(Base64.getDecoder().decode(base64), StandardCharsets.US_ASCII), source);
  }
}
