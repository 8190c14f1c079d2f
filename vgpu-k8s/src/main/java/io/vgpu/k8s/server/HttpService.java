package io.vgpu.k8s.server;

import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.TrustManager;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.Scheduler;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP or HTTPS server: fixed routes, failures answered with one line — never a stack trace in
 * a body or in an INFO log — and bounded in every way a slow or hostile client could stretch it.
 *
 * <p>It runs on Jetty (core, no servlets), whose selector reads requests without holding a thread:
 * the JDK's built-in server gives every connection a worker thread for as long as its client takes to
 * send the request, so a handful of clients trickling bytes stop it. Here a request holds a worker only
 * once it has fully arrived; the workers and their queue are bounded; every connection must deliver a
 * request within the request timeout; bodies above the limit are refused on their announced length;
 * and the number of connections is capped. An inline route ({@link InlineHandler}) is answered by the
 * selector's thread itself where its answer needs no waiting, without a worker.
 *
 * <p>Routes may require a TLS client certificate signed by a given {@link ClientCertificateAuthority};
 * the listener then asks every client for a certificate and each route checks its own authority, so
 * open routes (a webhook the API server calls without a certificate) can share it.
 */
public final class HttpService implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HttpService.class);

  /** Handles one request. Throw {@link BadRequest} for a client error; anything else is a 500. */
  @FunctionalInterface
  public interface Handler {
    /** Answers the request. */
    Response handle(Request request) throws Exception;
  }

  /**
   * Handles one request whose answer may wait for something else (a lock, another request) without
   * holding a worker thread meanwhile. The response is sent when the future completes; a future that
   * fails with {@link BadRequest} is a 400, with anything else a 500. The handler must complete it,
   * and should do so soon once {@link Request#clientGone} completes.
   */
  @FunctionalInterface
  public interface AsyncHandler {
    /** Starts answering the request. */
    CompletableFuture<Response> handle(Request request) throws Exception;
  }

  /**
   * Answers a request on the connection's own I/O thread where that needs no waiting (no I/O, no other
   * thread's work), and hands the rest to a worker. Each hand-off wakes a worker and, once it has
   * answered, the I/O thread again to read the next request: a route kube-scheduler calls for every pod
   * saves both where it can answer at once, or start an answer that other threads finish. The first step
   * must never wait: while it runs, no other connection of the server is read or written.
   */
  @FunctionalInterface
  public interface InlineHandler {
    /** The answer, or the work that may wait, for a worker ({@link Inline#onWorker}). */
    Inline handle(Request request) throws Exception;
  }

  /**
   * What an {@link InlineHandler}'s first step came to: an answer (perhaps still to come, from other
   * threads), or the rest of the work for a worker.
   *
   * @param answer the answer, sent as soon as it completes; null when {@code rest} gives it
   * @param rest the work left for a worker, which may wait; null when {@code answer} is given
   */
  public record Inline(@Nullable CompletableFuture<Response> answer, @Nullable AsyncHandler rest) {
    /** Checks that exactly one of the two is given. */
    public Inline {
      if ((answer == null) == (rest == null)) {
        throw new IllegalArgumentException("an inline step gives either an answer or the rest of the work, not " + (answer == null ? "neither" : "both"));
      }
    }

    /** Answered at once. */
    public static Inline answer(Response answer) {
      return new Inline(CompletableFuture.completedFuture(answer), null);
    }

    /**
     * Answered when {@code answer} completes, which other threads do: the I/O thread is not held meanwhile.
     * The request's {@link Request#clientGone} applies as it does to an {@link AsyncHandler}.
     */
    public static Inline answerLater(CompletableFuture<Response> answer) {
      return new Inline(answer, null);
    }

    /** Finished by {@code rest} on a worker, which ignores the request it is given (it has what it needs). */
    public static Inline onWorker(Handler rest) {
      return new Inline(null, async(rest));
    }

    /** Finished by {@code rest} on a worker; its answer may wait as an {@link AsyncHandler}'s does. */
    public static Inline onWorkerAsync(AsyncHandler rest) {
      return new Inline(null, rest);
    }
  }

  /**
   * A request as handlers see it.
   *
   * @param method the HTTP method
   * @param path the request path
   * @param body the request body, fully read
   * @param clientGone completes when the client goes away before its answer is sent (it closed the
   *     connection, having given up): an asynchronous handler stops working on it then
   */
  public record Request(String method, String path, byte[] body, CompletionStage<Void> clientGone) {
    /** A request whose client stays. */
    public Request(String method, String path, byte[] body) {
      this(method, path, body, new CompletableFuture<>());
    }
  }

  /**
   * A response: its body in memory, or written by {@code streamed} as it is sent.
   *
   * @param status the HTTP status
   * @param contentType the content type
   * @param body the body (empty when {@code streamed} writes it)
   * @param streamed writes the body into the connection in chunks as it makes them (sent chunked,
   *     without a length; for a body too large to hold whole), or null
   */
  public record Response(int status, String contentType, byte[] body, @Nullable BodyWriter streamed) {
    /** A response whose body is in memory. */
    public Response(int status, String contentType, byte[] body) {
      this(status, contentType, body, null);
    }

    /** A response whose body {@code writer} writes as it is sent. */
    public static Response streamed(int status, String contentType, BodyWriter writer) {
      return new Response(status, contentType, new byte[0], writer);
    }

    /** A JSON response. */
    public static Response json(int status, byte[] body) {
      return new Response(status, "application/json", body);
    }

    /** A plain-text response. */
    public static Response text(int status, String body) {
      return new Response(status, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * Writes a streamed response's body. It runs on the worker thread that answered the request (for a
   * {@link Handler}; an {@link AsyncHandler}'s runs on the thread that completed its answer), its writes
   * block, and a client that has not read the body by the request timeout loses its connection.
   */
  @FunctionalInterface
  public interface BodyWriter {
    /** Writes the body into {@code out} (closed by the caller). */
    void writeTo(OutputStream out) throws IOException;
  }

  /** A client error: answered with status 400 and the message as one line. */
  public static final class BadRequest extends Exception {
    private static final long serialVersionUID = 1L;

    /** Creates the error with a one-line message. */
    public BadRequest(String message) {
      super(message);
    }
  }

  private final Server server;
  private final ServerConnector connector;
  private final RequestDeadlines deadlines;

  private HttpService(Server server, ServerConnector connector, RequestDeadlines deadlines) {
    this.server = server;
    this.connector = connector;
    this.deadlines = deadlines;
  }

  /** Starts describing a server bound to {@code address}. */
  public static Builder builder(InetSocketAddress address) {
    return new Builder(address);
  }

  /**
   * Parses a bind address as the scheduler's flags write it: {@code host:port}, {@code :port} (all
   * interfaces) or {@code [v6]:port}.
   *
   * @throws IllegalArgumentException naming the value when it is malformed
   */
  public static InetSocketAddress parseAddress(String flag, String value) {
    int colon = value.lastIndexOf(':');
    if (colon < 0) {
      throw new IllegalArgumentException(flag + " '" + value + "' must be host:port or :port");
    }
    String host = value.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(value.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " '" + value + "' has no numeric port");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException(flag + " '" + value + "' has port " + port + " outside 0..65535");
    }
    return host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
  }

  /** The port the server listens on (useful when bound to port 0). */
  public int port() {
    return connector.getLocalPort();
  }

  @Override
  public void close() {
    deadlines.stop();
    try {
      server.stop();
    } catch (Exception e) {
      LOG.warn("stopping the server failed: {}", oneLine(String.valueOf(e)));
    }
  }

  /**
   * A route: its handler (or, for an inline route, the first step, whose worker part is then run as an
   * ordinary handler) and the authority whose client certificates it requires, if any.
   */
  private record Route(@Nullable AsyncHandler handler, @Nullable InlineHandler inline, @Nullable ClientCertificateAuthority clients) {
    Route(AsyncHandler handler, @Nullable ClientCertificateAuthority clients) {
      this(handler, null, clients);
    }
  }

  private static AsyncHandler async(Handler handler) {
    return request -> CompletableFuture.completedFuture(handler.handle(request));
  }

  /** Describes an {@link HttpService}. */
  public static final class Builder {
    private final InetSocketAddress address;
    private final Map<String, Map<String, Route>> routes = new LinkedHashMap<>();
    private @Nullable KeyManager keyManager;
    private int maxBodyBytes = 1 << 20;
    private int threads = 4;
    private int queue = 64;
    private int maxConnections = 256;
    private Duration requestTimeout = Duration.ofSeconds(10);
    private Duration idleTimeout = Duration.ofSeconds(30);
    private String name = "http";

    private Builder(InetSocketAddress address) {
      this.address = address;
    }

    /** Serves HTTPS with this key manager (e.g. a {@link ReloadingKeyManager}). */
    public Builder tls(KeyManager value) {
      this.keyManager = value;
      return this;
    }

    /** Bodies above this size are refused with 400 (default 1 MiB, as HAMi). */
    public Builder maxBodyBytes(int value) {
      this.maxBodyBytes = value;
      return this;
    }

    /** Worker threads, which run handlers (default 4). */
    public Builder threads(int value) {
      this.threads = value;
      return this;
    }

    /** Requests waiting for a worker beyond which new ones are answered 503 (default 64). */
    public Builder queue(int value) {
      this.queue = value;
      return this;
    }

    /** Open connections beyond which new ones wait to be accepted (default 256). */
    public Builder maxConnections(int value) {
      this.maxConnections = value;
      return this;
    }

    /**
     * How long a client may take to deliver a request: its headers from the time the connection opened
     * or the previous response was sent, its body from the time its headers arrived (default 10 s).
     */
    public Builder requestTimeout(Duration value) {
      this.requestTimeout = value;
      return this;
    }

    /** How long a connection may stay silent before it is closed (default 30 s). */
    public Builder idleTimeout(Duration value) {
      this.idleTimeout = value;
      return this;
    }

    /** A name for the worker threads and logs. */
    public Builder name(String value) {
      this.name = value;
      return this;
    }

    /** Routes {@code method path} to {@code handler}, open to any client. */
    public Builder route(String method, String path, Handler handler) {
      routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, new Route(async(handler), null));
      return this;
    }

    /**
     * Routes {@code method path} to an asynchronous {@code handler}; with {@code clients}, only for
     * clients presenting a certificate that authority trusts.
     */
    public Builder routeAsync(String method, String path, @Nullable ClientCertificateAuthority clients, AsyncHandler handler) {
      routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, new Route(handler, clients));
      return this;
    }

    /**
     * Routes {@code method path} to {@code handler}, whose first step runs on the connection's I/O thread
     * (see {@link InlineHandler}); with {@code clients}, only for clients presenting a certificate that
     * authority trusts.
     */
    public Builder routeInline(String method, String path, @Nullable ClientCertificateAuthority clients, InlineHandler handler) {
      routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, new Route(null, handler, clients));
      return this;
    }

    /**
     * Routes {@code method path} to {@code handler} for clients presenting a TLS certificate that
     * {@code clients} trusts; others get 401 (no certificate) or 403 (another authority's).
     */
    public Builder route(String method, String path, ClientCertificateAuthority clients, Handler handler) {
      routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, new Route(async(handler), clients));
      return this;
    }

    /**
     * Binds and starts the server.
     *
     * @throws IOException when the address cannot be bound, or a route needs client certificates on a
     *     listener without TLS
     */
    public HttpService start() throws IOException {
      Set<ClientCertificateAuthority> authorities = new LinkedHashSet<>();
      routes.values().forEach(byMethod -> byMethod.values().forEach(r -> {
        if (r.clients() != null) {
          authorities.add(r.clients());
        }
      }));
      if (!authorities.isEmpty() && keyManager == null) {
        throw new IOException(name + ": client certificates need TLS, and no server certificate is configured");
      }
      // One acceptor and one selector thread besides the workers; no threads reserved beyond them.
      QueuedThreadPool pool = new QueuedThreadPool(threads + 2, 2, 60_000, new ArrayBlockingQueue<>(queue));
      pool.setName("vgpu-" + name);
      pool.setDaemon(true);
      pool.setReservedThreads(0);
      Server server = new Server(pool);
      HttpConfiguration http = new HttpConfiguration();
      http.setSendServerVersion(false);
      http.setSendXPoweredBy(false);
      HttpConnectionFactory httpFactory = new HttpConnectionFactory(http);
      ServerConnector connector;
      if (keyManager != null) {
        // kube-scheduler calls https://127.0.0.1:<port> with a certificate made out to the Service's
        // names: the Host need not be one of them (Jetty would otherwise add a customizer that refuses it).
        http.addCustomizer(new SecureRequestCustomizer(false));
        connector = new ServerConnector(server, 1, 1, new SslConnectionFactory(sslContextFactory(keyManager, authorities), "http/1.1"), httpFactory);
      } else {
        connector = new ServerConnector(server, 1, 1, httpFactory);
      }
      connector.setHost(address.getAddress() == null || address.getAddress().isAnyLocalAddress() ? null : address.getAddress().getHostAddress());
      connector.setPort(address.getPort());
      connector.setIdleTimeout(idleTimeout.toMillis());
      RequestDeadlines deadlines = new RequestDeadlines(requestTimeout, server.getScheduler(), name);
      connector.addBean(deadlines);
      server.addConnector(connector);
      server.addBean(new NetworkConnectionLimit(maxConnections, connector));
      server.setErrorHandler(new OneLineErrors());
      server.setHandler(new Dispatcher(copyOf(routes), maxBodyBytes, requestTimeout, name, deadlines));
      server.setStopTimeout(1000);
      try {
        server.start();
      } catch (IOException e) {
        stopQuietly(server);
        throw new IOException(name + ": cannot listen on " + address + ": " + oneLine(e.getMessage()), e);
      } catch (Exception e) {
        stopQuietly(server);
        throw new IOException(name + ": cannot start: " + oneLine(String.valueOf(e)), e);
      }
      deadlines.start();
      return new HttpService(server, connector, deadlines);
    }

    private static Map<String, Map<String, Route>> copyOf(Map<String, Map<String, Route>> routes) {
      Map<String, Map<String, Route>> copy = new LinkedHashMap<>();
      routes.forEach((path, byMethod) -> copy.put(path, Map.copyOf(byMethod)));
      return Map.copyOf(copy);
    }

    private static SslContextFactory.Server sslContextFactory(KeyManager keys, Set<ClientCertificateAuthority> authorities) throws IOException {
      SSLContext context;
      try {
        context = SSLContext.getInstance("TLS");
        TrustManager[] trust = authorities.isEmpty() ? null : new TrustManager[] {new AnyClientAuthority(new ArrayList<>(authorities))};
        context.init(new KeyManager[] {keys}, trust, null);
      } catch (GeneralSecurityException e) {
        throw new IOException("cannot set up TLS: " + e.getMessage(), e);
      }
      SslContextFactory.Server ssl = new SslContextFactory.Server();
      ssl.setSslContext(context);
      // Clients are identified by their certificate's chain, not by a host name.
      ssl.setEndpointIdentificationAlgorithm(null);
      ssl.setWantClientAuth(!authorities.isEmpty());
      return ssl;
    }
  }

  private static void stopQuietly(Server server) {
    try {
      server.stop();
    } catch (Exception e) {
      LOG.debug("stopping a server that failed to start", e);
    }
  }

  /**
   * Routes requests; reads bodies without holding a thread and runs handlers on the bounded workers, and
   * inline routes' first steps on the thread that read the request.
   */
  private static final class Dispatcher extends org.eclipse.jetty.server.Handler.Abstract.NonBlocking {
    private final Map<String, Map<String, Route>> routes;
    /** How far past the limit an announced body is still drained before the refusal. */
    private static final int DRAIN_FACTOR = 8;

    private final int maxBodyBytes;
    private final Duration requestTimeout;
    private final String name;
    private final RequestDeadlines deadlines;

    Dispatcher(Map<String, Map<String, Route>> routes, int maxBodyBytes, Duration requestTimeout, String name, RequestDeadlines deadlines) {
      this.routes = routes;
      this.maxBodyBytes = maxBodyBytes;
      this.requestTimeout = requestTimeout;
      this.name = name;
      this.deadlines = deadlines;
    }

    @Override
    public boolean handle(org.eclipse.jetty.server.Request request, org.eclipse.jetty.server.Response response, Callback callback) {
      Connection connection = request.getConnectionMetaData().getConnection();
      deadlines.started(connection);
      Callback done = new Callback() {
        @Override
        public void succeeded() {
          deadlines.finished(connection);
          callback.succeeded();
        }

        @Override
        public void failed(Throwable x) {
          deadlines.finished(connection);
          callback.failed(x);
        }

        // Jetty's own callback's type: a blocking one would be handed to another thread when a write
        // completes on the I/O thread, and that thread would then wake the I/O thread for the next request.
        @Override
        public InvocationType getInvocationType() {
          return callback.getInvocationType();
        }
      };
      String path = request.getHttpURI().getPath();
      String method = request.getMethod();
      Map<String, Route> byMethod = routes.get(path);
      if (byMethod == null) {
        send(response, done, Response.text(404, "no such path: " + path + "\n"), false);
        return true;
      }
      Route route = byMethod.get(method);
      if (route == null) {
        response.getHeaders().put(HttpHeader.ALLOW, String.join(", ", byMethod.keySet()));
        send(response, done, Response.text(405, method + " is not allowed on " + path + "\n"), false);
        return true;
      }
      if (route.clients() != null) {
        Response refusal = authorize(connection.getEndPoint(), route.clients(), path);
        if (refusal != null) {
          send(response, done, refusal, false);
          return true;
        }
      }
      if (request.getLength() > maxBodyBytes) {
        refuseOversized(request, response, done);
        return true;
      }
      CompletableFuture<byte[]> body = BodyReader.read(request, maxBodyBytes);
      // A body that came whole with the head (kube-scheduler's, nearly always) needs no timer: one set
      // and cancelled per request is a timer-queue insertion and removal, and a wake-up of the timer's
      // thread when its queue was empty, for nothing.
      Scheduler.Task deadline =
          body.isDone() ? null : request.getComponents().getScheduler().schedule(() -> body.completeExceptionally(new TimeoutException()), requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
      Executor workers = request.getComponents().getExecutor();
      body.whenComplete((bytes, error) -> {
        if (deadline != null) {
          deadline.cancel();
        }
        if (error != null) {
          send(response, done, bodyFailure(error), true);
          return;
        }
        ClientDeparture departure = new ClientDeparture(connection.getEndPoint());
        AsyncHandler handler = route.handler();
        if (route.inline() != null) {
          Inline first;
          try {
            first = route.inline().handle(new Request(method, path, bytes, departure.gone()));
          } catch (Exception e) {
            send(response, done, failure(method, path, e), false);
            return;
          }
          if (first.answer() != null) {
            answer(first.answer(), departure, true, request, response, done, method, path);
            return;
          }
          handler = first.rest();
        }
        AsyncHandler onWorker = handler;
        try {
          workers.execute(() -> answer(run(onWorker, new Request(method, path, bytes, departure.gone())), departure, false, request, response, done, method, path));
        } catch (RejectedExecutionException e) {
          send(response, done, Response.text(503, name + " is busy; retry\n"), true);
        }
      });
      return true;
    }

    /**
     * Sends {@code answer} once it completes, watching for the client's departure meanwhile. {@code
     * onIoThread}: the answer was started on the connection's I/O thread, where a streamed body, whose
     * writes block, must not be written.
     */
    private void answer(CompletableFuture<Response> answer, ClientDeparture departure, boolean onIoThread, org.eclipse.jetty.server.Request request,
        org.eclipse.jetty.server.Response response, Callback done, String method, String path) {
      boolean immediate = answer.isDone();
      if (!immediate) {
        departure.start();
      }
      answer.whenComplete((value, failure) -> {
        departure.stop();
        Response answered = failure == null ? value : failure(method, path, failure);
        if (answered.streamed() == null) {
          send(response, done, answered, departure.pipelined());
          return;
        }
        // A streamed body is written by a worker, or the thread that completed the answer; a client that
        // reads it too slowly loses the connection at the request timeout rather than holding the thread.
        Runnable write = () -> {
          Connection connection = request.getConnectionMetaData().getConnection();
          Scheduler.Task slowReader = request.getComponents().getScheduler().schedule(
              () -> connection.getEndPoint().close(new TimeoutException("response not read within " + requestTimeout.toMillis() + " ms")),
              requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
          try {
            send(response, done, answered, departure.pipelined());
          } finally {
            slowReader.cancel();
          }
        };
        if (!(onIoThread && immediate)) {
          write.run();
          return;
        }
        try {
          request.getComponents().getExecutor().execute(write);
        } catch (RejectedExecutionException e) {
          send(response, done, Response.text(503, name + " is busy; retry\n"), true);
        }
      });
    }

    /**
     * Refuses a body announced over the limit. Closing with the body unread makes the kernel reset the
     * connection, and a reset can reach the client before it has read the 400; so a body up to
     * {@link #DRAIN_FACTOR} times the limit is read and discarded (within the request timeout) first.
     */
    private void refuseOversized(org.eclipse.jetty.server.Request request, org.eclipse.jetty.server.Response response, Callback done) {
      Response refusal = Response.text(400, "request body exceeds " + maxBodyBytes + " bytes\n");
      if (request.getLength() > (long) maxBodyBytes * DRAIN_FACTOR) {
        send(response, done, refusal, true);
        return;
      }
      Scheduler.Task deadline =
          request.getComponents().getScheduler().schedule(() -> request.fail(new TimeoutException()), requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
      Content.Source.consumeAll(request, Callback.from(() -> {
        deadline.cancel();
        send(response, done, refusal, true);
      }, failure -> {
        deadline.cancel();
        send(response, done, refusal, true);
      }));
    }

    private Response bodyFailure(Throwable error) {
      Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null ? error.getCause() : error;
      if (cause instanceof TimeoutException) {
        return Response.text(408, "request body not received within " + requestTimeout.toMillis() + " ms\n");
      }
      if (cause instanceof BodyReader.BodyTooLarge) {
        return Response.text(400, "request body exceeds " + maxBodyBytes + " bytes\n");
      }
      return Response.text(400, "request body unreadable: " + oneLine(String.valueOf(cause.getMessage())) + "\n");
    }

    private CompletableFuture<Response> run(AsyncHandler handler, Request request) {
      try {
        CompletableFuture<Response> answer = handler.handle(request);
        return answer == null ? CompletableFuture.failedFuture(new IllegalStateException("the handler gave no answer")) : answer;
      } catch (Exception e) {
        return CompletableFuture.failedFuture(e);
      }
    }

    private Response failure(String method, String path, Throwable failure) {
      Throwable e = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null ? failure.getCause() : failure;
      if (e instanceof BadRequest) {
        return Response.text(400, oneLine(e.getMessage()) + "\n");
      }
      LOG.warn("{} {} {} failed: {}", name, method, path, oneLine(String.valueOf(e)));
      LOG.debug("{} {} failure detail", name, path, e);
      return Response.text(500, "internal error: " + oneLine(String.valueOf(e.getMessage())) + "\n");
    }

    /** Null when the client presented a certificate {@code clients} trusts; else the refusal. */
    private static @Nullable Response authorize(EndPoint endPoint, ClientCertificateAuthority clients, String path) {
      EndPoint.SslSessionData tls = endPoint.getSslSessionData();
      if (tls == null) {
        return Response.text(401, path + " requires a TLS client certificate\n");
      }
      SSLSession session = tls.sslSession();
      Certificate[] peer;
      try {
        peer = session.getPeerCertificates();
      } catch (SSLPeerUnverifiedException e) {
        return Response.text(401, path + " requires a TLS client certificate\n");
      }
      X509Certificate[] chain = new X509Certificate[peer.length];
      for (int i = 0; i < peer.length; i++) {
        if (!(peer[i] instanceof X509Certificate x)) {
          return Response.text(403, path + " requires an X.509 client certificate\n");
        }
        chain[i] = x;
      }
      if (!clients.trusts(session, chain)) {
        return Response.text(403, path + ": the client certificate is not signed by " + clients + "\n");
      }
      return null;
    }
  }

  private static void send(org.eclipse.jetty.server.Response response, Callback callback, Response r, boolean close) {
    response.setStatus(r.status());
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, r.contentType());
    if (close) {
      response.getHeaders().put(HttpHeader.CONNECTION, "close");
    }
    BodyWriter streamed = r.streamed();
    if (streamed == null) {
      response.getHeaders().put(HttpHeader.CONTENT_LENGTH, r.body().length);
      response.write(true, ByteBuffer.wrap(r.body()), callback);
      return;
    }
    // Blocking writes on this worker thread, bounded by the dispatcher's deadline for streamed answers.
    try (OutputStream out = Content.Sink.asOutputStream(response)) {
      streamed.writeTo(out);
    } catch (IOException | RuntimeException e) {
      LOG.debug("a streamed response failed: {}", oneLine(String.valueOf(e)));
      callback.failed(e);
      return;
    }
    callback.succeeded();
  }

  /** Jetty's own errors (a malformed request line, headers too large) as one plain line. */
  private static final class OneLineErrors implements org.eclipse.jetty.server.Request.Handler {
    @Override
    public boolean handle(org.eclipse.jetty.server.Request request, org.eclipse.jetty.server.Response response, Callback callback) {
      int status = response.getStatus() >= 400 ? response.getStatus() : 500;
      String reason = HttpStatus.getMessage(status);
      send(response, callback, Response.text(status, status + " " + reason + "\n"), false);
      return true;
    }
  }

  /** The first line of a message, so that a log line or body is always one line. */
  public static String oneLine(@Nullable String message) {
    if (message == null) {
      return "";
    }
    int newline = message.indexOf('\n');
    return (newline < 0 ? message : message.substring(0, newline)).strip();
  }
}
