package io.vgpu.k8s.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Real HTTP and HTTPS round trips on loopback. */
class HttpServiceTest {
  private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

  private static HttpResponse<String> post(HttpClient client, String url, String body) throws Exception {
    return client.send(HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void routesLimitsAndOneLineErrors() throws Exception {
    try (HttpService server =
        HttpService.builder(LOOPBACK)
            .maxBodyBytes(16)
            .route("POST", "/echo", r -> HttpService.Response.json(200, r.body()))
            .route("POST", "/bad", r -> { throw new HttpService.BadRequest("field X: value 'y' is not allowed\nsecond line"); })
            .route("POST", "/boom", r -> { throw new IllegalStateException("kaput\n\tat some.Frame"); })
            .start()) {
      HttpClient client = HttpClient.newHttpClient();
      String base = "http://127.0.0.1:" + server.port();
      var echo = post(client, base + "/echo", "{\"a\":1}");
      assertThat(echo.statusCode()).isEqualTo(200);
      assertThat(echo.body()).isEqualTo("{\"a\":1}");
      assertThat(echo.headers().firstValue("Content-Type")).contains("application/json");
      assertThat(post(client, base + "/echo", "x".repeat(17)).body()).isEqualTo("request body exceeds 16 bytes\n");
      assertThat(post(client, base + "/bad", "").body()).isEqualTo("field X: value 'y' is not allowed\n");
      var boom = post(client, base + "/boom", "");
      assertThat(boom.statusCode()).isEqualTo(500);
      assertThat(boom.body()).isEqualTo("internal error: kaput\n");
      assertThat(post(client, base + "/nowhere", "").statusCode()).isEqualTo(404);
      var get = client.send(HttpRequest.newBuilder(URI.create(base + "/echo")).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(get.statusCode()).isEqualTo(405);
    }
  }

  @Test
  void aStreamedBodyArrivesWholeChunkedAndTheConnectionServesTheNextRequest() throws Exception {
    // Larger than any buffer on the way, written in pieces as a scrape writes its chunks.
    String piece = "line of a large exposition\n".repeat(1_000);
    int pieces = 200;
    try (HttpService server =
        HttpService.builder(LOOPBACK)
            .route("GET", "/metrics", r -> HttpService.Response.streamed(200, "text/plain; version=0.0.4; charset=utf-8", out -> {
              for (int i = 0; i < pieces; i++) {
                out.write(piece.getBytes(StandardCharsets.UTF_8));
              }
            }))
            .route("GET", "/healthz", r -> HttpService.Response.text(200, "ok\n"))
            .start()) {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      String base = "http://127.0.0.1:" + server.port();
      var scrape = client.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(scrape.statusCode()).isEqualTo(200);
      assertThat(scrape.headers().firstValue("Content-Type")).contains("text/plain; version=0.0.4; charset=utf-8");
      assertThat(scrape.headers().firstValue("Content-Length")).isEmpty();
      assertThat(scrape.headers().firstValue("Transfer-Encoding")).contains("chunked");
      assertThat(scrape.body()).hasSize(piece.length() * pieces).isEqualTo(piece.repeat(pieces));
      var next = client.send(HttpRequest.newBuilder(URI.create(base + "/healthz")).GET().build(), HttpResponse.BodyHandlers.ofString());
      assertThat(next.body()).isEqualTo("ok\n");
    }
  }

  /**
   * A client that asks for a streamed body and never reads it holds the only worker only until the
   * request timeout: its connection is closed, and the next request is answered.
   */
  @Test
  void aClientThatDoesNotReadAStreamedBodyLosesItsConnectionAtTheRequestTimeout() throws Exception {
    byte[] piece = new byte[1 << 20];
    try (HttpService server =
            HttpService.builder(LOOPBACK)
                .threads(1)
                .requestTimeout(Duration.ofMillis(800))
                // 256 MiB: far more than the sockets' buffers hold for a reader that reads nothing.
                .route("GET", "/metrics", r -> HttpService.Response.streamed(200, "text/plain", out -> {
                  for (int i = 0; i < 256; i++) {
                    out.write(piece);
                  }
                }))
                .route("GET", "/healthz", r -> HttpService.Response.text(200, "ok\n"))
                .start();
        java.net.Socket stalled = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port())) {
      stalled.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      Thread.sleep(200);
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      var health = assertTimeoutPreemptively(Duration.ofSeconds(10),
          () -> client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/healthz")).GET().build(), HttpResponse.BodyHandlers.ofString()));
      assertThat(health.body()).isEqualTo("ok\n");
      // What the stalled client can still read ends: the server closed its connection part way.
      stalled.setSoTimeout(10_000);
      java.io.InputStream in = stalled.getInputStream();
      long read = 0;
      byte[] buffer = new byte[1 << 16];
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        read += n;
      }
      assertThat(read).isLessThan(256L << 20);
    }
  }

  @Test
  void parsesBindAddresses() {
    assertThat(HttpService.parseAddress("--http_bind", "127.0.0.1:8080").getPort()).isEqualTo(8080);
    assertThat(HttpService.parseAddress("--metrics-bind-address", ":9395").getAddress().isAnyLocalAddress()).isTrue();
    assertThatThrownBy(() -> HttpService.parseAddress("--http_bind", "localhost"))
        .hasMessage("--http_bind 'localhost' must be host:port or :port");
    assertThatThrownBy(() -> HttpService.parseAddress("--http_bind", "x:99999"))
        .hasMessage("--http_bind 'x:99999' has port 99999 outside 0..65535");
  }

  @ParameterizedTest
  @EnumSource(TestCertificates.KeyFormat.class)
  void servesHttpsFromPemFilesInEveryKeyFormat(TestCertificates.KeyFormat format, @TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    X509Certificate issued = TestCertificates.write(cert, key, "vgpu-" + format, format);
    var keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(1), Clock.systemUTC());
    try (HttpService server = HttpService.builder(LOOPBACK).tls(keys).route("GET", "/healthz", r -> HttpService.Response.text(200, "ok")).start()) {
      HttpClient client = HttpClient.newBuilder().sslContext(TestCertificates.trusting(issued)).build();
      var response = client.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.port() + "/healthz")).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(response.body()).isEqualTo("ok");
    }
  }

  @Test
  void picksUpARotatedCertificateWithoutARestart(@TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    X509Certificate first = TestCertificates.write(cert, key, "first", TestCertificates.KeyFormat.PKCS1_RSA);
    MutableClock clock = new MutableClock();
    var keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(10), clock);
    try (HttpService server = HttpService.builder(LOOPBACK).tls(keys).route("GET", "/healthz", r -> HttpService.Response.text(200, "ok")).start()) {
      String url = "https://127.0.0.1:" + server.port() + "/healthz";
      assertThat(peerCommonName(first, url)).isEqualTo("CN=first");

      X509Certificate second = TestCertificates.write(cert, key, "second", TestCertificates.KeyFormat.SEC1_EC);
      Files.setLastModifiedTime(cert, FileTime.from(Instant.now().plusSeconds(5)));
      clock.advance(Duration.ofSeconds(11));
      assertThat(peerCommonName(second, url)).isEqualTo("CN=second");
    }
  }

  @Test
  void aBrokenReplacementKeepsThePreviousCertificate(@TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    TestCertificates.write(cert, key, "first", TestCertificates.KeyFormat.PKCS8_RSA);
    var keys = new ReloadingKeyManager(cert, key, Duration.ZERO, Clock.systemUTC());
    Files.writeString(key, "not a key", StandardCharsets.US_ASCII);
    Files.setLastModifiedTime(key, FileTime.from(Instant.now().plusSeconds(5)));
    assertThat(keys.reloadIfChanged()).isFalse();
    assertThat(keys.getPrivateKey("vgpu")).isNotNull();
  }

  @Test
  void missingKeyBlockIsNamed(@TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    TestCertificates.write(cert, key, "x", TestCertificates.KeyFormat.PKCS8_RSA);
    Files.writeString(key, "hello");
    assertThatThrownBy(() -> PemCredentials.read(cert, key))
        .hasMessage(key + ": no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block found");
  }

  /**
   * 50 connections that send nothing or trickle a request byte by byte (headers or body) hold no
   * worker: a well-behaved request on a fresh connection is answered at once. The JDK's server gave
   * each trickler a worker thread until it finished, so four of them stopped the listener.
   */
  @Test
  void idleAndTricklingConnectionsDoNotHoldUpARequest() throws Exception {
    try (HttpService server =
            HttpService.builder(LOOPBACK).route("POST", "/filter", r -> HttpService.Response.json(200, r.body())).start();
        SlowClients slow = new SlowClients(server.port(), 50)) {
      slow.start();
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      String url = "http://127.0.0.1:" + server.port() + "/filter";
      assertTimeoutPreemptively(Duration.ofSeconds(5), () -> post(client, url, "{}")); // warm up class loading
      long worst = 0;
      for (int i = 0; i < 5; i++) {
        long start = System.nanoTime();
        var response = assertTimeoutPreemptively(Duration.ofSeconds(5), () -> post(client, url, "{\"n\":1}"));
        worst = Math.max(worst, System.nanoTime() - start);
        assertThat(response.body()).isEqualTo("{\"n\":1}");
      }
      assertThat(slow.stillOpen()).as("the slow clients are still connected while the request is served").isGreaterThan(40);
      System.out.printf("slowest /filter among 50 slow connections: %.1f ms%n", worst / 1e6);
    }
  }

  @Test
  void aClientThatNeverFinishesItsRequestIsCutOffAfterTheRequestTimeout() throws Exception {
    try (HttpService server =
            HttpService.builder(LOOPBACK)
                .requestTimeout(Duration.ofMillis(600))
                .route("POST", "/filter", r -> HttpService.Response.json(200, r.body()))
                .start();
        SlowClients slow = new SlowClients(server.port(), 6)) {
      slow.start();
      long deadline = System.nanoTime() + Duration.ofSeconds(8).toNanos();
      while (slow.stillOpen() > 0 && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      assertThat(slow.stillOpen()).as("every slow connection closed by the server").isZero();
    }
  }

  @Test
  void theBodyIsBoundedBeforeItIsRead() throws Exception {
    try (HttpService server = HttpService.builder(LOOPBACK).maxBodyBytes(1024).route("POST", "/filter", r -> HttpService.Response.json(200, r.body())).start();
        java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port())) {
      socket.setSoTimeout(5000);
      // Announces 10 MiB and sends none of it: refused on the announcement, without waiting for the body.
      socket.getOutputStream().write("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 10485760\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      String status = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII)).readLine();
      assertThat(status).isEqualTo("HTTP/1.1 400 Bad Request");
    }
  }

  /** A client that writes its whole body before reading (as kube-scheduler's does) reads the refusal, not a reset. */
  @Test
  void aClientThatSendsAnOversizedBodyInFullReadsTheRefusal() throws Exception {
    int limit = 1 << 20;
    try (HttpService server = HttpService.builder(LOOPBACK).maxBodyBytes(limit).route("POST", "/filter", r -> HttpService.Response.json(200, r.body())).start()) {
      HttpClient client = HttpClient.newHttpClient();
      String url = "http://127.0.0.1:" + server.port() + "/filter";
      for (int attempt = 0; attempt < 40; attempt++) {
        var refused = post(client, url, "x".repeat(limit + 1 + attempt * 4096));
        assertThat(refused.statusCode()).as("attempt %d", attempt).isEqualTo(400);
        assertThat(refused.body()).isEqualTo("request body exceeds " + limit + " bytes\n");
      }
    }
  }

  @Test
  void aChunkedBodyAboveTheLimitIsRefusedWithoutReadingItAll() throws Exception {
    try (HttpService server = HttpService.builder(LOOPBACK).maxBodyBytes(1024).route("POST", "/filter", r -> HttpService.Response.json(200, r.body())).start();
        java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port())) {
      socket.setSoTimeout(5000);
      String chunk = "x".repeat(2000);
      socket.getOutputStream().write(("POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + Integer.toHexString(chunk.length()) + "\r\n" + chunk + "\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      var in = new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
      assertThat(in.readLine()).isEqualTo("HTTP/1.1 400 Bad Request");
      String line;
      while (!(line = in.readLine()).isEmpty()) {
        // headers
      }
      assertThat(in.readLine()).isEqualTo("request body exceeds 1024 bytes");
    }
  }

  /** The request timeout bounds slow requests, never a TLS connection kube-scheduler keeps using. */
  @Test
  void aKeepAliveTlsConnectionInSteadyUseOutlivesTheRequestTimeout(@TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    X509Certificate issued = TestCertificates.write(cert, key, "steady", TestCertificates.KeyFormat.SEC1_EC);
    var keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(10), Clock.systemUTC());
    try (HttpService server =
            HttpService.builder(LOOPBACK).tls(keys).requestTimeout(Duration.ofMillis(400)).route("POST", "/filter", r -> HttpService.Response.json(200, r.body())).start();
        javax.net.ssl.SSLSocket socket =
            (javax.net.ssl.SSLSocket) TestCertificates.trusting(issued).getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.port())) {
      socket.setSoTimeout(5000);
      var in = new java.io.DataInputStream(socket.getInputStream());
      for (int i = 0; i < 8; i++) {
        String body = "{\"n\":" + i + "}";
        socket.getOutputStream().write(("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
        assertThat(readResponseBody(in)).as("request %d on the same connection", i).isEqualTo(body);
        Thread.sleep(150);
      }
    }
  }

  /** An async route whose answers wait until released, recording each request's departure signal. */
  private static final class WaitingRoute implements HttpService.AsyncHandler {
    final java.util.concurrent.LinkedBlockingQueue<java.util.concurrent.CompletionStage<Void>> departures = new java.util.concurrent.LinkedBlockingQueue<>();
    final java.util.concurrent.CompletableFuture<HttpService.Response> release = new java.util.concurrent.CompletableFuture<>();

    @Override
    public java.util.concurrent.CompletableFuture<HttpService.Response> handle(HttpService.Request request) {
      departures.add(request.clientGone());
      return release.thenApply(r -> r);
    }

    java.util.concurrent.CompletableFuture<Void> next() throws Exception {
      java.util.concurrent.CompletionStage<Void> gone = departures.poll(5, java.util.concurrent.TimeUnit.SECONDS);
      assertThat(gone).as("a request reached the handler").isNotNull();
      return gone.toCompletableFuture();
    }
  }

  @Test
  void anAsyncHandlerLearnsThatItsClientGaveUp() throws Exception {
    WaitingRoute waiting = new WaitingRoute();
    try (HttpService server = HttpService.builder(LOOPBACK).routeAsync("POST", "/bind", null, waiting).start()) {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/bind"))
          .timeout(Duration.ofMillis(300)).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
      assertThatThrownBy(() -> client.send(request, HttpResponse.BodyHandlers.ofString())).isInstanceOf(java.net.http.HttpTimeoutException.class);
      waiting.next().get(5, java.util.concurrent.TimeUnit.SECONDS);
      // The server serves on: an answer that comes late goes nowhere and breaks nothing.
      waiting.release.complete(HttpService.Response.text(200, "late\n"));
      assertThat(post(client, "http://127.0.0.1:" + server.port() + "/bind", "{}").body()).isEqualTo("late\n");
    }
  }

  @Test
  void aTlsClientThatGivesUpIsNoticedToo(@TempDir Path dir) throws Exception {
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    X509Certificate issued = TestCertificates.write(cert, key, "departing", TestCertificates.KeyFormat.SEC1_EC);
    var keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(1), Clock.systemUTC());
    WaitingRoute waiting = new WaitingRoute();
    try (HttpService server = HttpService.builder(LOOPBACK).tls(keys).routeAsync("POST", "/bind", null, waiting).start()) {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).sslContext(TestCertificates.trusting(issued)).build();
      HttpRequest request = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + server.port() + "/bind"))
          .timeout(Duration.ofMillis(500)).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
      assertThatThrownBy(() -> client.send(request, HttpResponse.BodyHandlers.ofString())).isInstanceOf(java.net.http.HttpTimeoutException.class);
      waiting.next().get(5, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  @Test
  void aClientThatWaitsKeepsItsConnectionForTheNextRequest() throws Exception {
    java.util.concurrent.atomic.AtomicInteger served = new java.util.concurrent.atomic.AtomicInteger();
    HttpService.AsyncHandler slow = r -> java.util.concurrent.CompletableFuture.supplyAsync(
        () -> HttpService.Response.text(200, "answer " + served.incrementAndGet() + (r.clientGone().toCompletableFuture().isDone() ? " (gone)" : "") + "\n"),
        java.util.concurrent.CompletableFuture.delayedExecutor(150, java.util.concurrent.TimeUnit.MILLISECONDS));
    try (HttpService server = HttpService.builder(LOOPBACK).routeAsync("POST", "/bind", null, slow).start();
        java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port())) {
      socket.setSoTimeout(5000);
      java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
      for (int i = 1; i <= 3; i++) {
        socket.getOutputStream().write("POST /bind HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}".getBytes(StandardCharsets.US_ASCII));
        assertThat(readResponseBody(in)).isEqualTo("answer " + i + "\n");
      }
    }
  }

  /**
   * With its one worker held by a blocking route, the server still answers an inline route on an open
   * connection at once: the inline step needs no worker. Its rest waits for the worker. (A new connection
   * needs a pool thread to be set up, so the test's connection is opened before the worker is held.)
   */
  @Test
  void anInlineRouteIsAnsweredWhileTheOnlyWorkerIsBusy() throws Exception {
    java.util.concurrent.CountDownLatch holding = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    try (HttpService server = HttpService.builder(LOOPBACK).threads(1)
        .route("POST", "/block", r -> {
          holding.countDown();
          release.await();
          return HttpService.Response.text(200, "released\n");
        })
        .routeInline("POST", "/quick", null, r -> new String(r.body(), StandardCharsets.UTF_8).equals("later")
            ? HttpService.Inline.onWorker(rest -> HttpService.Response.text(200, "from a worker\n"))
            : HttpService.Inline.answer(HttpService.Response.text(200, "at once: " + new String(r.body(), StandardCharsets.UTF_8) + "\n")))
        .start();
        java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port())) {
      socket.setSoTimeout(5000);
      java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
      java.io.OutputStream out = socket.getOutputStream();
      out.write(quick("first"));
      assertThat(readResponseBody(in)).isEqualTo("at once: first\n");

      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      var blocked = client.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + "/block")).POST(HttpRequest.BodyPublishers.ofString("")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(holding.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("the worker is held").isTrue();
      out.write(quick("now"));
      assertThat(readResponseBody(in)).isEqualTo("at once: now\n");

      out.write(quick("later"));
      socket.setSoTimeout(300);
      assertThatThrownBy(in::read).as("the rest of the work waits for the worker").isInstanceOf(java.net.SocketTimeoutException.class);
      release.countDown();
      socket.setSoTimeout(5000);
      assertThat(readResponseBody(in)).isEqualTo("from a worker\n");
      assertThat(blocked.get(5, java.util.concurrent.TimeUnit.SECONDS).body()).isEqualTo("released\n");
    }
  }

  private static byte[] quick(String body) {
    return ("POST /quick HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII);
  }

  /** An answer started inline and finished by another thread is sent when it completes; a departed client is noticed meanwhile. */
  @Test
  void anInlineAnswerThatComesLaterIsSentAndItsClientsDepartureIsNoticed() throws Exception {
    java.util.concurrent.LinkedBlockingQueue<java.util.concurrent.CompletionStage<Void>> departures = new java.util.concurrent.LinkedBlockingQueue<>();
    java.util.concurrent.CompletableFuture<HttpService.Response> release = new java.util.concurrent.CompletableFuture<>();
    try (HttpService server = HttpService.builder(LOOPBACK).threads(1)
        .routeInline("POST", "/bind", null, r -> {
          departures.add(r.clientGone());
          return HttpService.Inline.answerLater(release.thenApply(x -> x));
        })
        .start()) {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      String url = "http://127.0.0.1:" + server.port() + "/bind";
      HttpRequest impatient = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofMillis(300)).POST(HttpRequest.BodyPublishers.ofString("{}")).build();
      assertThatThrownBy(() -> client.send(impatient, HttpResponse.BodyHandlers.ofString())).isInstanceOf(java.net.http.HttpTimeoutException.class);
      departures.poll(5, java.util.concurrent.TimeUnit.SECONDS).toCompletableFuture().get(5, java.util.concurrent.TimeUnit.SECONDS);
      var waiting = client.sendAsync(HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(departures.poll(5, java.util.concurrent.TimeUnit.SECONDS)).as("the second request reached the route").isNotNull();
      release.complete(HttpService.Response.text(200, "bound\n"));
      assertThat(waiting.get(5, java.util.concurrent.TimeUnit.SECONDS).body()).isEqualTo("bound\n");
    }
  }

  @Test
  void anInlineStepsFailuresAreOneLineAnswers() throws Exception {
    try (HttpService server = HttpService.builder(LOOPBACK)
        .routeInline("POST", "/bad", null, r -> { throw new HttpService.BadRequest("field X: value 'y' is not allowed\nsecond line"); })
        .routeInline("POST", "/boom", null, r -> { throw new IllegalStateException("kaput\n\tat some.Frame"); })
        .routeInline("POST", "/late-boom", null, r -> HttpService.Inline.answerLater(java.util.concurrent.CompletableFuture.failedFuture(new HttpService.BadRequest("late and bad"))))
        .start()) {
      HttpClient client = HttpClient.newHttpClient();
      String base = "http://127.0.0.1:" + server.port();
      var bad = post(client, base + "/bad", "");
      assertThat(bad.statusCode()).isEqualTo(400);
      assertThat(bad.body()).isEqualTo("field X: value 'y' is not allowed\n");
      var boom = post(client, base + "/boom", "");
      assertThat(boom.statusCode()).isEqualTo(500);
      assertThat(boom.body()).isEqualTo("internal error: kaput\n");
      assertThat(post(client, base + "/late-boom", "").body()).isEqualTo("late and bad\n");
    }
  }

  @Test
  void anInlineStepGivesAnAnswerOrTheRestOfTheWorkNotBoth() {
    assertThatThrownBy(() -> new HttpService.Inline(null, null)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("neither");
    assertThatThrownBy(() -> new HttpService.Inline(java.util.concurrent.CompletableFuture.completedFuture(HttpService.Response.text(200, "")), r -> null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("both");
  }

  /**
   * A body that arrives in pieces, over TLS and in the clear, is read whole by the I/O thread (each piece
   * as it comes), and the connection serves the next request after it.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void aBodyThatArrivesInPiecesIsReadWhole(boolean tls, @TempDir Path dir) throws Exception {
    HttpService.Builder builder = HttpService.builder(LOOPBACK)
        .routeInline("POST", "/filter", null, r -> HttpService.Inline.answer(HttpService.Response.text(200, r.body().length + " " + (char) r.body()[r.body().length - 1] + "\n")));
    javax.net.ssl.SSLSocketFactory sockets = null;
    if (tls) {
      Path cert = dir.resolve("tls.crt");
      Path key = dir.resolve("tls.key");
      X509Certificate issued = TestCertificates.write(cert, key, "pieces", TestCertificates.KeyFormat.SEC1_EC);
      builder.tls(new ReloadingKeyManager(cert, key, Duration.ofSeconds(1), Clock.systemUTC()));
      sockets = TestCertificates.trusting(issued).getSocketFactory();
    }
    try (HttpService server = builder.start();
        java.net.Socket plain = new java.net.Socket(InetAddress.getLoopbackAddress(), server.port());
        java.net.Socket socket = sockets == null ? plain : sockets.createSocket(plain, "127.0.0.1", server.port(), true)) {
      socket.setSoTimeout(5000);
      java.io.OutputStream out = socket.getOutputStream();
      java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
      int length = 100_000;
      for (int round = 0; round < 2; round++) {
        out.write(("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        byte[] body = "a".repeat(length - 1).concat("z").getBytes(StandardCharsets.US_ASCII);
        for (int from = 0; from < length; from += 30_000) {
          Thread.sleep(30);
          out.write(body, from, Math.min(30_000, length - from));
          out.flush();
        }
        assertThat(readResponseBody(in)).as("round %d", round).isEqualTo(length + " z\n");
      }
    }
  }

  /** Reads one HTTP/1.1 response with a Content-Length and returns its body. */
  private static String readResponseBody(java.io.DataInputStream in) throws Exception {
    int length = -1;
    for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
      if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(line.indexOf(':') + 1).trim());
      }
    }
    byte[] body = new byte[length];
    in.readFully(body);
    return new String(body, StandardCharsets.US_ASCII);
  }

  private static String readLine(java.io.DataInputStream in) throws Exception {
    StringBuilder out = new StringBuilder();
    for (int c = in.read(); c != '\n'; c = in.read()) {
      if (c < 0) {
        throw new java.io.EOFException("connection closed");
      }
      if (c != '\r') {
        out.append((char) c);
      }
    }
    return out.toString();
  }

  private static String peerCommonName(X509Certificate trusted, String url) throws Exception {
    HttpClient client = HttpClient.newBuilder().sslContext(TestCertificates.trusting(trusted)).build();
    HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
    SSLSession session = response.sslSession().orElseThrow();
    return ((X509Certificate) session.getPeerCertificates()[0]).getSubjectX500Principal().getName();
  }

  private static final class MutableClock extends Clock {
    private Instant now = Instant.now();

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public java.time.ZoneId getZone() {
      return java.time.ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
