package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.k8s.server.TestCertificates;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The warm-up's private listener and its client, over real loopback sockets. */
class LoopbackExtenderTest {
  @TempDir Path dir;

  @Test
  void postsOverTlsAndGetsEachAnswersBodyAcrossReconnections() throws Exception {
    AtomicInteger served = new AtomicInteger();
    HttpService.Builder routes = HttpService.builder(LoopbackExtender.address()).name("test")
        .route("POST", "/upper", r -> {
          served.incrementAndGet();
          return HttpService.Response.json(200, new String(r.body(), StandardCharsets.UTF_8).toUpperCase().getBytes(StandardCharsets.UTF_8));
        });
    try (LoopbackExtender wire = LoopbackExtender.start(routes, keys("served"))) {
      // More calls than one connection carries: the client opens a second one on its own.
      for (int i = 0; i < 250; i++) {
        assertThat(new String(wire.post("/upper", ("{\"n\":\"call-" + i + "\"}").getBytes(StandardCharsets.UTF_8)), StandardCharsets.UTF_8))
            .isEqualTo("{\"N\":\"CALL-" + i + "\"}");
      }
    }
    assertThat(served).hasValue(250);
  }

  @Test
  void worksWithoutTlsWhereTheSchedulerServesPlainHttp() throws Exception {
    HttpService.Builder routes = HttpService.builder(LoopbackExtender.address()).name("test").route("POST", "/len", r -> HttpService.Response.text(200, "" + r.body().length));
    try (LoopbackExtender wire = LoopbackExtender.start(routes, null)) {
      assertThat(wire.post("/len", new byte[1234])).asString(StandardCharsets.UTF_8).isEqualTo("1234");
    }
  }

  @Test
  void anAnswerOtherThan200IsAnErrorNamingItsStatusAndBody() throws Exception {
    HttpService.Builder routes = HttpService.builder(LoopbackExtender.address()).name("test").route("POST", "/refuse", r -> {
      throw new HttpService.BadRequest("no thanks");
    });
    try (LoopbackExtender wire = LoopbackExtender.start(routes, keys("served"))) {
      assertThatThrownBy(() -> wire.post("/refuse", new byte[] {'{', '}'})).hasMessageContaining("/refuse").hasMessageContaining("400").hasMessageContaining("no thanks");
    }
  }

  @Test
  void theClientTrustsOnlyTheCertificateTheSchedulerServes() throws Exception {
    ReloadingKeyManager served = keys("served");
    ReloadingKeyManager other = keys("other");
    try (HttpService server = HttpService.builder(LoopbackExtender.address()).name("test").tls(served).route("POST", "/x", r -> HttpService.Response.text(200, "")).start()) {
      try (SSLSocket pinnedToOther = (SSLSocket) LoopbackExtender.pinnedTo(other).getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.port())) {
        assertThatThrownBy(pinnedToOther::startHandshake).isInstanceOf(SSLHandshakeException.class);
      }
      try (SSLSocket pinnedToServed = (SSLSocket) LoopbackExtender.pinnedTo(served).getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.port())) {
        pinnedToServed.startHandshake();
        assertThat(pinnedToServed.getSession().getPeerCertificates()[0]).isEqualTo(served.getCertificateChain("any")[0]);
      }
    }
  }

  private ReloadingKeyManager keys(String name) throws Exception {
    return TestCertificates.keyManager(dir, name, TestCertificates.KeyFormat.SEC1_EC);
  }
}
