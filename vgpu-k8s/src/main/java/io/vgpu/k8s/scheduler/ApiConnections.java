package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.http.TlsVersion;
import io.fabric8.kubernetes.client.internal.SSLUtils;
import io.fabric8.kubernetes.client.utils.HttpClientUtils;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kept-alive HTTP/1.1 connections to the API server for {@link ApiWrites}: a write is sent and its
 * answer read on the calling thread, over a connection taken from a pool, with the credentials and
 * headers of the client's own interceptors (its bearer token and the token's refresh, basic auth,
 * impersonation, custom headers) and its TLS settings. Through fabric8's client and OkHttp, with their
 * layers and a thread hand-off each way, the scheduler's five writes per pod cost it about half a
 * millisecond of CPU more at 5,000 nodes than here, where a write is the socket's write and read.
 *
 * <p>A connection the server closed while it was idle is noticed on the next write, which is sent again
 * once on a new connection when nothing of an answer had come. A 401 lets the interceptors refresh the
 * credentials (as fabric8 does) and the write is sent once more. A client configured with an HTTP proxy
 * gets none of this ({@link #of} is empty): its writes stay on fabric8's client.
 */
final class ApiConnections {
  private static final Logger LOG = LoggerFactory.getLogger(ApiConnections.class);
  /** Connections kept idle at most; more are closed when given back. */
  private static final int MAX_IDLE = 16;
  /** An idle connection older than this is closed rather than used: servers drop idle ones after a while. */
  private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(60);
  /** The longest header line or status line read from an answer. */
  private static final int MAX_LINE = 16 * 1024;
  /** The most of a refusal's body kept (its Status); the rest is read and dropped. */
  private static final int MAX_KEPT_BODY = 64 * 1024;

  private static final Map<KubernetesClient, Optional<ApiConnections>> BY_CLIENT = Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * The answer to one write.
   *
   * @param code the HTTP status code
   * @param body the answer's body when the code is not 2xx (at most {@value #MAX_KEPT_BODY} bytes), else empty
   */
  record Answer(int code, byte[] body) {}

  private final HttpClient http;
  private final Config config;
  private final List<Interceptor> interceptors;
  private final Interceptor.RequestTags tags;
  private final String base;
  /** The path of the API server's URL (empty unless it is served below a prefix). */
  private final String basePath;
  private final String host;
  private final int port;
  private final String hostHeader;
  private final @Nullable SSLContext tls;
  private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();
  private final ExecutorService writers;

  private ApiConnections(KubernetesClient client, URI master, @Nullable SSLContext tls) {
    this.http = client.getHttpClient();
    this.config = client.getConfiguration();
    this.interceptors = List.copyOf(HttpClientUtils.createApplicableInterceptors(config, HttpClientUtils.getHttpClientFactory()).values());
    this.tags = http instanceof Interceptor.RequestTags t ? t : new NoTags();
    String url = master.toString();
    this.base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    this.basePath = master.getRawPath() == null ? "" : master.getRawPath().replaceAll("/+$", "");
    // An IPv6 literal is bracketed in the URL and the Host header, not in the socket's address.
    String named = master.getHost();
    this.host = named.startsWith("[") && named.endsWith("]") ? named.substring(1, named.length() - 1) : named;
    boolean https = "https".equals(master.getScheme());
    this.port = master.getPort() > 0 ? master.getPort() : https ? 443 : 80;
    this.hostHeader = master.getPort() > 0 ? named + ":" + master.getPort() : named;
    this.tls = tls;
    AtomicInteger threads = new AtomicInteger();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(4, 4, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
      Thread t = new Thread(r, "vgpu-api-write-" + threads.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    pool.allowCoreThreadTimeOut(true);
    this.writers = pool;
  }

  /**
   * The connections of {@code client}'s API server, one pool per client; empty when its writes must stay
   * on fabric8's client (an HTTP proxy, a URL that is neither http nor https, TLS that cannot be set up
   * from its configuration).
   */
  static Optional<ApiConnections> of(KubernetesClient client) {
    return BY_CLIENT.computeIfAbsent(client, ApiConnections::create);
  }

  private static Optional<ApiConnections> create(KubernetesClient client) {
    Config config = client.getConfiguration();
    if (config.getHttpProxy() != null || config.getHttpsProxy() != null) {
      LOG.debug("API writes go through fabric8's client: a proxy is configured");
      return Optional.empty();
    }
    URI master;
    try {
      master = URI.create(client.getMasterUrl().toString());
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    if (master.getHost() == null || !("http".equals(master.getScheme()) || "https".equals(master.getScheme()))) {
      return Optional.empty();
    }
    SSLContext tls = null;
    if ("https".equals(master.getScheme())) {
      try {
        tls = SSLUtils.sslContext(config);
      } catch (Exception e) {
        LOG.debug("API writes go through fabric8's client: TLS from its configuration failed: {}", e.toString());
        return Optional.empty();
      }
    }
    return Optional.of(new ApiConnections(client, master, tls));
  }

  /** Where asynchronous writes run: a few threads of their own, each sending one write at a time. */
  ExecutorService writers() {
    return writers;
  }

  /**
   * Sends one request and reads its answer on this thread.
   *
   * @param method e.g. {@code PATCH}
   * @param path the path below the API server's URL, e.g. {@code /api/v1/nodes/a}
   * @param contentType the body's media type
   * @param body the body
   * @throws IOException when the API server cannot be reached or its answer is cut short or not HTTP
   */
  Answer send(String method, String path, String contentType, byte[] body) throws IOException {
    HttpRequest.Builder builder = http.newHttpRequestBuilder().uri(base + path).method(method, contentType, "");
    HttpRequest plain = builder.build();
    for (Interceptor interceptor : interceptors) {
      interceptor.before(builder, plain, tags);
    }
    HttpRequest request = builder.build();
    Answer answer = exchange(head(method, path, contentType, body.length, request.headers()), body);
    if (answer.code() == 401 && refreshed(builder, request, answer)) {
      answer = exchange(head(method, path, contentType, body.length, builder.build().headers()), body);
    }
    return answer;
  }

  /** Whether an interceptor renewed the credentials after a 401 (fabric8's token refresh). */
  private boolean refreshed(HttpRequest.Builder builder, HttpRequest request, Answer answer) {
    HttpResponse<byte[]> refused = new Refusal(request, answer);
    boolean again = false;
    for (Interceptor interceptor : interceptors) {
      try {
        CompletableFuture<Boolean> retry = interceptor.afterFailure(builder, refused, tags);
        int timeout = millis(config.getRequestTimeout());
        again |= Boolean.TRUE.equals(retry.get(timeout > 0 ? timeout : 10_000, TimeUnit.MILLISECONDS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (Exception e) {
        LOG.debug("refreshing the API server's credentials failed: {}", e.toString());
      }
    }
    return again;
  }

  private byte[] head(String method, String path, String contentType, int length, Map<String, List<String>> headers) {
    StringBuilder head = new StringBuilder(256).append(method).append(' ').append(basePath).append(path).append(" HTTP/1.1\r\n");
    head.append("Host: ").append(hostHeader).append("\r\n");
    boolean agent = false;
    for (Map.Entry<String, List<String>> header : headers.entrySet()) {
      String name = header.getKey();
      if (name.equalsIgnoreCase("Host") || name.equalsIgnoreCase("Content-Type") || name.equalsIgnoreCase("Content-Length") || name.equalsIgnoreCase("Connection")) {
        continue;
      }
      agent |= name.equalsIgnoreCase("User-Agent");
      for (String value : header.getValue()) {
        head.append(name).append(": ").append(value).append("\r\n");
      }
    }
    if (!agent && config.getUserAgent() != null) {
      head.append("User-Agent: ").append(config.getUserAgent()).append("\r\n");
    }
    head.append("Accept: application/json\r\n");
    head.append("Content-Type: ").append(contentType).append("\r\n");
    head.append("Content-Length: ").append(length).append("\r\n\r\n");
    return head.toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  /** One request on a pooled connection, again once on a new one when a reused connection was found closed. */
  private Answer exchange(byte[] head, byte[] body) throws IOException {
    Connection connection = take();
    try {
      return finish(connection, connection.exchange(head, body));
    } catch (StaleConnectionException e) {
      connection.close();
      Connection fresh = open();
      try {
        return finish(fresh, fresh.exchange(head, body));
      } catch (IOException | RuntimeException again) {
        fresh.close();
        throw again;
      }
    } catch (IOException | RuntimeException e) {
      connection.close();
      throw e;
    }
  }

  private Answer finish(Connection connection, Answer answer) {
    if (connection.reusable && idle.size() < MAX_IDLE) {
      connection.idleSince = System.nanoTime();
      idle.push(connection);
    } else {
      connection.close();
    }
    return answer;
  }

  private Connection take() throws IOException {
    long now = System.nanoTime();
    for (Connection c = idle.poll(); c != null; c = idle.poll()) {
      if (now - c.idleSince < IDLE_NANOS && !c.socket.isClosed()) {
        return c;
      }
      c.close();
    }
    return open();
  }

  private Connection open() throws IOException {
    Socket socket = new Socket();
    try {
      socket.setTcpNoDelay(true);
      socket.connect(new InetSocketAddress(host, port), millis(config.getConnectionTimeout()));
      socket.setSoTimeout(millis(config.getRequestTimeout()));
      if (tls != null) {
        SSLSocket secure = (SSLSocket) tls.getSocketFactory().createSocket(socket, host, port, true);
        SSLParameters parameters = secure.getSSLParameters();
        TlsVersion[] versions = config.getTlsVersions();
        if (versions != null && versions.length > 0) {
          parameters.setProtocols(Arrays.stream(versions).map(TlsVersion::javaName).toArray(String[]::new));
        }
        if (config.getTlsServerName() != null && !config.getTlsServerName().isEmpty()) {
          parameters.setServerNames(List.of(new SNIHostName(config.getTlsServerName())));
        }
        // The server's name is checked as HTTPS checks it, against the certificate's names.
        parameters.setEndpointIdentificationAlgorithm(config.isTrustCerts() || config.isDisableHostnameVerification() ? null : "HTTPS");
        secure.setSSLParameters(parameters);
        secure.startHandshake();
        return new Connection(secure);
      }
      return new Connection(socket);
    } catch (IOException | RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  /** A timeout of the configuration in milliseconds; 0 (none) when unset or not positive. */
  private static int millis(@Nullable Integer configured) {
    return configured == null || configured < 0 ? 0 : configured;
  }

  /** A reused connection that the server had closed: nothing of an answer came, so the write can be sent again. */
  private static final class StaleConnectionException extends IOException {
    private static final long serialVersionUID = 1L;

    StaleConnectionException(IOException cause) {
      super(cause.getMessage(), cause);
    }
  }

  /** One HTTP/1.1 connection, used by one request at a time. */
  private static final class Connection {
    final Socket socket;
    final InputStream in;
    final OutputStream out;
    boolean used;
    boolean reusable = true;
    long idleSince;

    Connection(Socket socket) throws IOException {
      this.socket = socket;
      this.in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
      this.out = new BufferedOutputStream(socket.getOutputStream(), 8 * 1024);
    }

    Answer exchange(byte[] head, byte[] body) throws IOException {
      boolean reused = used;
      used = true;
      int first;
      try {
        out.write(head);
        out.write(body);
        out.flush();
        first = in.read();
      } catch (SocketTimeoutException e) {
        // The server has the request and is slow: sending it again could write twice.
        throw e;
      } catch (IOException e) {
        if (reused) {
          throw new StaleConnectionException(e);
        }
        throw e;
      }
      if (first < 0) {
        EOFException closed = new EOFException("the API server closed the connection without an answer");
        throw reused ? new StaleConnectionException(closed) : closed;
      }
      String status = line(first);
      // "HTTP/1.1 200 OK": a 1xx is followed by the real answer.
      int code = code(status);
      Headers headers = headers();
      while (code >= 100 && code < 200) {
        status = line(in.read());
        code = code(status);
        headers = headers();
      }
      boolean http10 = status.startsWith("HTTP/1.0");
      reusable = !http10 && !headers.close;
      boolean keep = code < 200 || code >= 300;
      ByteArrayOutputStream kept = keep ? new ByteArrayOutputStream() : null;
      if (code == 204 || code == 304) {
        // No body.
      } else if (headers.chunked) {
        readChunked(kept);
      } else if (headers.length >= 0) {
        copy(headers.length, kept);
      } else {
        copy(Long.MAX_VALUE, kept);
        reusable = false;
      }
      return new Answer(code, kept == null ? new byte[0] : kept.toByteArray());
    }

    private static int code(String status) throws IOException {
      if (!status.startsWith("HTTP/1.") || status.length() < 12) {
        throw new IOException("not an HTTP answer from the API server: " + clip(status));
      }
      try {
        return Integer.parseInt(status, 9, 12, 10);
      } catch (NumberFormatException e) {
        throw new IOException("not an HTTP status from the API server: " + clip(status));
      }
    }

    private static String clip(String s) {
      return s.length() > 60 ? s.substring(0, 60) + "..." : s;
    }

    private record Headers(long length, boolean chunked, boolean close) {}

    private Headers headers() throws IOException {
      long length = -1;
      boolean chunked = false;
      boolean close = false;
      for (String line = line(in.read()); !line.isEmpty(); line = line(in.read())) {
        int colon = line.indexOf(':');
        if (colon <= 0) {
          throw new IOException("a malformed header line from the API server: " + clip(line));
        }
        String name = line.substring(0, colon).trim();
        String value = line.substring(colon + 1).trim();
        if (name.equalsIgnoreCase("Content-Length")) {
          try {
            length = Long.parseLong(value);
          } catch (NumberFormatException e) {
            throw new IOException("a malformed Content-Length from the API server: " + clip(value));
          }
        } else if (name.equalsIgnoreCase("Transfer-Encoding")) {
          chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
        } else if (name.equalsIgnoreCase("Connection")) {
          close = value.toLowerCase(Locale.ROOT).contains("close");
        }
      }
      return new Headers(length, chunked, close);
    }

    /** A line up to CRLF (or LF), starting with the byte already read. */
    private String line(int first) throws IOException {
      StringBuilder line = new StringBuilder(64);
      for (int b = first; ; b = in.read()) {
        if (b < 0) {
          throw new EOFException("the API server's answer was cut short");
        }
        if (b == '\n') {
          int end = line.length();
          return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
        }
        if (line.length() >= MAX_LINE) {
          throw new IOException("a header line over " + MAX_LINE + " bytes from the API server");
        }
        line.append((char) b);
      }
    }

    private void readChunked(@Nullable ByteArrayOutputStream kept) throws IOException {
      while (true) {
        String size = line(in.read());
        int semicolon = size.indexOf(';');
        long n;
        try {
          n = Long.parseLong((semicolon >= 0 ? size.substring(0, semicolon) : size).trim(), 16);
        } catch (NumberFormatException e) {
          throw new IOException("a malformed chunk size from the API server: " + clip(size));
        }
        if (n == 0) {
          // Trailers, then the empty line.
          while (!line(in.read()).isEmpty()) {
            // dropped
          }
          return;
        }
        copy(n, kept);
        if (!line(in.read()).isEmpty()) {
          throw new IOException("a chunk from the API server not ended by CRLF");
        }
      }
    }

    /** Reads {@code n} bytes (to the end when {@code Long.MAX_VALUE}), keeping the first of them in {@code kept}. */
    private void copy(long n, @Nullable ByteArrayOutputStream kept) throws IOException {
      byte[] buffer = new byte[8 * 1024];
      long left = n;
      while (left > 0) {
        int read = in.read(buffer, 0, (int) Math.min(buffer.length, left));
        if (read < 0) {
          if (n == Long.MAX_VALUE) {
            return;
          }
          throw new EOFException("the API server's answer was cut short");
        }
        if (kept != null && kept.size() < MAX_KEPT_BODY) {
          kept.write(buffer, 0, Math.min(read, MAX_KEPT_BODY - kept.size()));
        }
        left -= read;
      }
    }

    void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // Closing is all that was wanted.
      }
    }
  }

  /** A 401 as fabric8's interceptors read it. */
  private record Refusal(HttpRequest request, Answer answer) implements HttpResponse<byte[]> {
    @Override
    public int code() {
      return answer.code();
    }

    @Override
    public byte[] body() {
      return answer.body();
    }

    @Override
    public Optional<HttpResponse<?>> previousResponse() {
      return Optional.empty();
    }

    @Override
    public List<String> headers(String key) {
      return new ArrayList<>();
    }

    @Override
    public Map<String, List<String>> headers() {
      return Map.of();
    }
  }

  private static final class NoTags implements Interceptor.RequestTags {
    @Override
    public <T> @Nullable T getTag(Class<T> type) {
      return null;
    }
  }
}
