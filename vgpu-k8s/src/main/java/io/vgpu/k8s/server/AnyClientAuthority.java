package io.vgpu.k8s.server;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The TLS handshake's view of client certificates on a listener whose routes trust different
 * authorities: a certificate is accepted when any of them trusts it (each route then checks its own),
 * and the client is told every authority. A client without a certificate still connects; the routes
 * that need one refuse it.
 */
final class AnyClientAuthority extends X509ExtendedTrustManager {
  private final List<ClientCertificateAuthority> authorities;

  AnyClientAuthority(List<ClientCertificateAuthority> authorities) {
    this.authorities = List.copyOf(authorities);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    for (ClientCertificateAuthority authority : authorities) {
      if (authority.trusts(chain)) {
        return;
      }
    }
    throw new CertificateException("client certificate is not signed by a trusted authority");
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    checkClientTrusted(chain, authType);
  }

  @Override
  public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
    checkClientTrusted(chain, authType);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
    throw new CertificateException("this trust manager only checks clients");
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
    checkServerTrusted(chain, authType);
  }

  @Override
  public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
    checkServerTrusted(chain, authType);
  }

  @Override
  public X509Certificate[] getAcceptedIssuers() {
    return authorities.stream().flatMap(a -> a.authorities().stream()).toArray(X509Certificate[]::new);
  }
}
