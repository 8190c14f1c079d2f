package io.vgpu.k8s.server;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.UUID;
import javax.net.ssl.SSLSession;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * The certificate authorities whose client certificates a route accepts, read from a PEM bundle as
 * Kubernetes distributes them ({@code --client-ca-file}). A client is trusted when its chain leads to
 * one of them and is valid now for TLS client authentication (the JDK's PKIX checks: signatures,
 * validity, key usage).
 */
public final class ClientCertificateAuthority {
  private final String source;
  private final List<X509Certificate> authorities;
  private final X509TrustManager trust;
  /** Where a session keeps this authority's verdict: one name per authority, as several may judge one session. */
  private final String sessionKey = "io.vgpu.trusted-until." + UUID.randomUUID();

  private ClientCertificateAuthority(String source, List<X509Certificate> authorities) throws GeneralSecurityException, IOException {
    this.source = source;
    this.authorities = List.copyOf(authorities);
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    for (int i = 0; i < authorities.size(); i++) {
      store.setCertificateEntry("ca-" + i, authorities.get(i));
    }
    TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    factory.init(store);
    X509TrustManager found = null;
    for (TrustManager m : factory.getTrustManagers()) {
      if (m instanceof X509TrustManager x) {
        found = x;
      }
    }
    if (found == null) {
      throw new GeneralSecurityException("no X.509 trust manager");
    }
    this.trust = found;
  }

  /**
   * Reads a PEM bundle of CA certificates.
   *
   * @param flag the option that named the file, for messages
   * @throws IOException naming the flag and the file when it is missing or holds no certificate
   */
  public static ClientCertificateAuthority read(String flag, Path file) throws IOException {
    byte[] pem;
    try {
      pem = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new IOException(flag + " " + file + ": no such file");
    }
    List<X509Certificate> certificates;
    try {
      certificates =
          CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem)).stream().map(c -> (X509Certificate) c).toList();
    } catch (CertificateException e) {
      throw new IOException(flag + " " + file + ": not a PEM certificate bundle (" + HttpService.oneLine(e.getMessage()) + ")");
    }
    if (certificates.isEmpty()) {
      throw new IOException(flag + " " + file + ": no certificate found");
    }
    try {
      return new ClientCertificateAuthority(flag + " " + file, certificates);
    } catch (GeneralSecurityException e) {
      throw new IOException(flag + " " + file + ": " + HttpService.oneLine(e.getMessage()));
    }
  }

  /** The authorities, sent to clients as the acceptable issuers. */
  List<X509Certificate> authorities() {
    return authorities;
  }

  /**
   * Whether the peer of a TLS session presented a chain that {@link #trusts(X509Certificate[])}; the
   * verdict is kept with the session until the chain's first certificate expires, so that a connection
   * kept alive is checked once, not once per request (a session's chain never changes, and whether it
   * leads to these authorities changes only with time).
   *
   * @param chain the session's peer certificates, leaf first
   */
  public boolean trusts(SSLSession session, X509Certificate[] chain) {
    long now = System.currentTimeMillis();
    if (session.getValue(sessionKey) instanceof Long until && now < until) {
      return true;
    }
    if (!trusts(chain)) {
      return false;
    }
    long until = Long.MAX_VALUE;
    for (X509Certificate c : chain) {
      until = Math.min(until, c.getNotAfter().getTime());
    }
    session.putValue(sessionKey, until);
    return true;
  }

  /** Whether {@code chain} (leaf first) leads to one of the authorities and may authenticate a client. */
  public boolean trusts(X509Certificate[] chain) {
    if (chain.length == 0) {
      return false;
    }
    try {
      trust.checkClientTrusted(chain, chain[0].getPublicKey().getAlgorithm());
      return true;
    } catch (CertificateException | IllegalArgumentException e) {
      return false;
    }
  }

  @Override
  public String toString() {
    return source;
  }
}
