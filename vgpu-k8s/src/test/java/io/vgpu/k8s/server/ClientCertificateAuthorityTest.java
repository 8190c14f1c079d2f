package io.vgpu.k8s.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.util.HashMap;
import java.util.Map;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A client's chain is judged once per TLS session, and each authority judges for itself. */
class ClientCertificateAuthorityTest {
  /** A session that only keeps application values, as {@link SSLSession#putValue} does. */
  private static SSLSession session(Map<String, Object> values) {
    return (SSLSession) Proxy.newProxyInstance(SSLSession.class.getClassLoader(), new Class<?>[] {SSLSession.class}, (proxy, method, args) -> switch (method.getName()) {
      case "getValue" -> values.get((String) args[0]);
      case "putValue" -> values.put((String) args[0], args[1]);
      default -> throw new UnsupportedOperationException(method.getName());
    });
  }

  private static ClientCertificateAuthority read(Path dir, String name, X509Certificate ca) throws Exception {
    Path file = dir.resolve(name + ".pem");
    TestCertificates.writeBundle(file, ca);
    return ClientCertificateAuthority.read("--client-ca-file", file);
  }

  @Test
  void aSessionsChainIsJudgedOnceUntilItExpires(@TempDir Path dir) throws Exception {
    TestCertificates.Issued ours = TestCertificates.authority("ours");
    TestCertificates.Issued theirs = TestCertificates.authority("theirs");
    ClientCertificateAuthority authority = read(dir, "ours", ours.certificate());
    ClientCertificateAuthority other = read(dir, "theirs", theirs.certificate());
    X509Certificate[] kubeScheduler = {TestCertificates.issue(ours, "kube-scheduler", true).certificate()};
    X509Certificate[] stranger = {TestCertificates.issue(theirs, "stranger", true).certificate()};

    Map<String, Object> values = new HashMap<>();
    SSLSession session = session(values);
    assertThat(authority.trusts(session, kubeScheduler)).isTrue();
    assertThat(values.values()).containsExactly(kubeScheduler[0].getNotAfter().getTime());
    // The session's verdict is kept: the chain is not looked at again (a session's chain never changes).
    assertThat(authority.trusts(session, stranger)).isTrue();
    // Another authority judges the same session for itself.
    assertThat(other.trusts(session, kubeScheduler)).isFalse();
    assertThat(values).hasSize(1);

    // A verdict past the chain's expiry is judged again.
    values.replaceAll((k, v) -> System.currentTimeMillis() - 1);
    assertThat(authority.trusts(session, stranger)).isFalse();
    // A refusal is not kept.
    Map<String, Object> refused = new HashMap<>();
    assertThat(authority.trusts(session(refused), stranger)).isFalse();
    assertThat(refused).isEmpty();
  }
}
