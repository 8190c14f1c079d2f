package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.k8s.server.TestCertificates;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scheduler's writes over kept-alive connections, against a scripted HTTP/1.1 server on a real
 * socket: what goes on the wire, connections reused, a connection the server dropped while idle, a
 * chunked answer, a refusal's Status, a 401 that the client's token provider answers, a server that
 * does not answer, TLS with the configured authority and client certificate, an IPv6 literal, and a proxy that keeps the writes on fabric8's client.
 */
class ApiConnectionsTest {
  private ScriptedServer server;
  private KubernetesClient client;

  @AfterEach
  void close() throws IOException {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private KubernetesClient client(Config config) {
    client = new KubernetesClientBuilder().withConfig(config).build();
    return client;
  }

  private Config config() {
    return new ConfigBuilder(Config.empty()).withMasterUrl("http://127.0.0.1:" + server.port() + "/prefix/").withOauthToken("t0").withRequestTimeout(2_000).build();
  }

  @Test
  void aWriteIsOneRequestOnTheWireAndConnectionsAreKept() throws IOException {
    server = new ScriptedServer(request -> new Reply("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"kind\":1}\n", false));
    ApiWrites writes = new ApiWrites(client(config()));

    writes.patchPod("default", "p", "{\"metadata\":{}}");
    writes.create("default", "events", "{\"a\":\"é\"}");

    assertThat(server.requests()).hasSize(2);
    assertThat(server.requests().get(0))
        .isEqualTo("PATCH /prefix/api/v1/namespaces/default/pods/p HTTP/1.1\r\n"
            + "Host: 127.0.0.1:" + server.port() + "\r\n"
            + "Authorization: Bearer t0\r\n"
            + "User-Agent: " + client.getConfiguration().getUserAgent() + "\r\n"
            + "Accept: application/json\r\n"
            + "Content-Type: application/merge-patch+json\r\n"
            + "Content-Length: 15\r\n"
            + "\r\n"
            + "{\"metadata\":{}}");
    // The length is in bytes: the é is two.
    assertThat(server.requests().get(1)).startsWith("POST /prefix/api/v1/namespaces/default/events HTTP/1.1\r\n").contains("Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"a\":\"é\"}");
    assertThat(server.connections()).isEqualTo(1);
  }

  @Test
  void aConnectionTheServerDroppedWhileIdleIsReplacedAndTheWriteSentOnce() throws IOException {
    // Every answer ends its connection without saying so, as a server's idle timeout does.
    server = new ScriptedServer(request -> new Reply("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}", true));
    ApiWrites writes = new ApiWrites(client(config()));

    writes.patchNode("n", "{}");
    writes.patchNode("n", "{}");
    writes.patchNode("n", "{}");

    assertThat(server.requests()).hasSize(3);
    assertThat(server.connections()).isEqualTo(3);
  }

  @Test
  void aChunkedAnswerIsReadToItsEndAndARefusalCarriesItsStatus() throws IOException {
    AtomicInteger n = new AtomicInteger();
    String status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on nodes \\\"n\\\": the object has been modified\",\"reason\":\"Conflict\",\"code\":409}";
    server = new ScriptedServer(request -> n.incrementAndGet() == 1
        ? new Reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3;x=y\r\n\"b\"\r\n1\r\n}\r\n0\r\nTrailer: z\r\n\r\n", false)
        : new Reply("HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: " + status.length() + "\r\n\r\n" + status, false));
    ApiWrites writes = new ApiWrites(client(config()));

    writes.patchNode("n", "{}");
    KubernetesClientException refused = catchThrowableOfType(KubernetesClientException.class, () -> writes.patchNode("n", "{}"));

    assertThat(refused.getCode()).isEqualTo(409);
    assertThat(refused.getMessage()).contains("the object has been modified");
    assertThat(refused.getStatus().getReason()).isEqualTo("Conflict");
    // The chunked answer was read whole: the refusal came on the same connection.
    assertThat(server.connections()).isEqualTo(1);
  }

  @Test
  void a401LetsTheTokenProviderAnswerAndTheWriteIsSentAgain() throws IOException {
    AtomicInteger issued = new AtomicInteger();
    server = new ScriptedServer(request -> request.contains("Authorization: Bearer token-2\r\n")
        ? new Reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
        : new Reply("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", false));
    Config config = config();
    config.setOauthTokenProvider(() -> "token-" + issued.incrementAndGet());
    ApiWrites writes = new ApiWrites(client(config));

    writes.patchPod("default", "p", "{}");

    assertThat(server.requests()).hasSize(2);
    assertThat(server.requests().get(0)).contains("Authorization: Bearer token-1\r\n");
    assertThat(server.requests().get(1)).contains("Authorization: Bearer token-2\r\n");
  }

  @Test
  void aServerThatDoesNotAnswerFailsTheWriteWithinTheRequestTimeoutAndItIsNotSentAgain() throws IOException {
    AtomicInteger n = new AtomicInteger();
    server = new ScriptedServer(request -> n.incrementAndGet() == 1 ? new Reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false) : null);
    Config config = config();
    config.setRequestTimeout(300);
    ApiWrites writes = new ApiWrites(client(config));
    writes.patchPod("default", "p", "{}");

    // On the kept connection: the server has the write, so it must not be sent twice.
    KubernetesClientException timedOut = catchThrowableOfType(KubernetesClientException.class, () -> writes.patchPod("default", "p", "{\"second\":1}"));

    assertThat(timedOut.getMessage()).isEqualTo("the API server did not answer within 300 ms");
    assertThat(server.requests()).hasSize(2);
    assertThat(server.connections()).isEqualTo(1);
  }

  @Test
  void anAsynchronousWriteFailsItsFutureWithTheRefusal() throws IOException {
    server = new ScriptedServer(request -> new Reply("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false));
    ApiWrites writes = new ApiWrites(client(config()));

    Throwable failure = writes.patchPodAsync("default", "gone", "{}").handle((v, e) -> e).join();

    assertThat(failure).hasCauseInstanceOf(KubernetesClientException.class);
    assertThat(((KubernetesClientException) failure.getCause()).getCode()).isEqualTo(404);
  }

  @Test
  void anIpv6LiteralIsBracketedInTheUrlAndTheHostHeaderOnly() throws IOException {
    ServerSocket v6;
    try {
      v6 = new ServerSocket(0, 50, InetAddress.getByName("::1"));
    } catch (IOException e) {
      Assumptions.abort("no IPv6 loopback on this machine: " + e.getMessage());
      return;
    }
    server = new ScriptedServer(v6, request -> new Reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false));
    ApiWrites writes = new ApiWrites(client(new ConfigBuilder(Config.empty()).withMasterUrl("http://[::1]:" + server.port()).withRequestTimeout(2_000).build()));

    writes.patchNode("n", "{}");

    assertThat(server.requests()).singleElement().asString().startsWith("PATCH /api/v1/nodes/n HTTP/1.1\r\nHost: [::1]:" + server.port() + "\r\n");
  }

  @Test
  void aClientWithAProxyKeepsItsWritesOnItsOwnHttpClient() throws IOException {
    server = new ScriptedServer(request -> null);
    Config config = config();
    config.setHttpProxy("http://127.0.0.1:1");

    assertThat(ApiConnections.of(client(config))).isEmpty();
    client.close();
    client = null;
    assertThat(ApiConnections.of(client(config()))).isPresent();
  }

  @Test
  void overTlsTheServerIsVerifiedByTheConfiguredAuthorityAndTheClientCertificateIsPresented(@TempDir Path dir) throws Exception {
    TestCertificates.Issued ca = TestCertificates.authority("api-ca");
    TestCertificates.Issued serving = TestCertificates.issue(ca, "kube-apiserver", false);
    TestCertificates.Issued scheduler = TestCertificates.issue(ca, "vgpu-scheduler", true);
    TestCertificates.writeBundle(dir.resolve("ca.crt"), ca.certificate());
    TestCertificates.write(scheduler, dir.resolve("client.crt"), dir.resolve("client.key"));
    KeyStore keys = KeyStore.getInstance(KeyStore.getDefaultType());
    keys.load(null, null);
    keys.setKeyEntry("server", serving.keys().getPrivate(), new char[0], new X509Certificate[] {serving.certificate(), ca.certificate()});
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(keys, new char[0]);
    KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
    trusted.load(null, null);
    trusted.setCertificateEntry("ca", ca.certificate());
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trusted);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    SSLServerSocket listening = (SSLServerSocket) context.getServerSocketFactory().createServerSocket(0, 50, InetAddress.getLoopbackAddress());
    listening.setNeedClientAuth(true);
    List<String> clients = Collections.synchronizedList(new ArrayList<>());
    server = new ScriptedServer(listening, request -> new Reply("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false));
    server.onConnection = s -> {
      try {
        clients.add(((SSLSocket) s).getSession().getPeerPrincipal().getName());
      } catch (IOException e) {
        clients.add("none: " + e.getMessage());
      }
    };
    ConfigBuilder tls = new ConfigBuilder(Config.empty())
        .withCaCertFile(dir.resolve("ca.crt").toString())
        .withClientCertFile(dir.resolve("client.crt").toString())
        .withClientKeyFile(dir.resolve("client.key").toString())
        .withClientKeyAlgo("EC")
        .withRequestTimeout(2_000);

    new ApiWrites(client(tls.withMasterUrl("https://127.0.0.1:" + server.port()).build())).patchNode("n", "{}");
    assertThat(server.requests()).singleElement().asString().startsWith("PATCH /api/v1/nodes/n HTTP/1.1\r\n");
    assertThat(clients).containsExactly("CN=vgpu-scheduler");

    // The certificate names 127.0.0.1, not localhost: the server is not the one the URL names.
    client.close();
    ApiWrites mismatched = new ApiWrites(client(tls.withMasterUrl("https://localhost:" + server.port()).build()));
    KubernetesClientException refused = catchThrowableOfType(KubernetesClientException.class, () -> mismatched.patchNode("n", "{}"));
    assertThat(refused.getMessage()).startsWith("writing to the API server failed: ");
    assertThat(server.requests()).hasSize(1);
  }

  /** An answer: its bytes, and whether the server then closes the connection. */
  private record Reply(String bytes, boolean thenClose) {}

  /** An HTTP/1.1 server on a loopback socket that answers each request as its script says (null: never). */
  private static final class ScriptedServer implements AutoCloseable {
    private final ServerSocket socket;
    private final Function<String, Reply> script;
    private final List<String> requests = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger connections = new AtomicInteger();
    private final List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());
    /** Runs on each connection before its first request is read (a TLS server's handshake happens there). */
    volatile Consumer<Socket> onConnection = s -> {};

    ScriptedServer(Function<String, Reply> script) throws IOException {
      this(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), script);
    }

    ScriptedServer(ServerSocket socket, Function<String, Reply> script) {
      this.socket = socket;
      this.script = script;
      Thread acceptor = new Thread(this::accept, "scripted-api-server");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    List<String> requests() {
      return List.copyOf(requests);
    }

    int connections() {
      return connections.get();
    }

    private void accept() {
      while (!socket.isClosed()) {
        try {
          Socket s = socket.accept();
          connections.incrementAndGet();
          accepted.add(s);
          Thread t = new Thread(() -> serve(s), "scripted-api-connection");
          t.setDaemon(true);
          t.start();
        } catch (IOException e) {
          return;
        }
      }
    }

    private void serve(Socket s) {
      try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
        onConnection.accept(s);
        while (true) {
          String request = read(in);
          if (request == null) {
            return;
          }
          requests.add(request);
          Reply reply = script.apply(request);
          if (reply == null) {
            continue;
          }
          out.write(reply.bytes().getBytes(StandardCharsets.UTF_8));
          out.flush();
          if (reply.thenClose()) {
            return;
          }
        }
      } catch (IOException e) {
        // The client went away.
      }
    }

    /** One request, its head and its Content-Length of body, as text; null at the end of the stream. */
    private static String read(InputStream in) throws IOException {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int b;
      while ((b = in.read()) >= 0) {
        head.write(b);
        byte[] h = head.toByteArray();
        int n = h.length;
        if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
          break;
        }
      }
      if (b < 0) {
        return null;
      }
      String text = head.toString(StandardCharsets.UTF_8);
      int length = 0;
      for (String line : text.split("\r\n")) {
        if (line.regionMatches(true, 0, "Content-Length:", 0, 15)) {
          length = Integer.parseInt(line.substring(15).trim());
        }
      }
      byte[] body = in.readNBytes(length);
      return text + new String(body, StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
      socket.close();
      synchronized (accepted) {
        for (Socket s : accepted) {
          s.close();
        }
      }
    }
  }
}
