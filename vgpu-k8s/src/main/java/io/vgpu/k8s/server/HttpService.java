package io.vgpu.k8s.server;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP or HTTPS server on the JDK's built-in server: fixed routes, a request-size limit, and
 * failures answered with one line — never a stack trace in a body or in an INFO log.
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
   * A request as handlers see it.
   *
   * @param method the HTTP method
   * @param path the request path
   * @param body the request body, fully read
   */
  public record Request(String method, String path, byte[] body) {}

  /**
   * A response.
   *
   * @param status the HTTP status
   * @param contentType the content type
   * @param body the body
   */
  public record Response(int status, String contentType, byte[] body) {
    /** A JSON response. */
    public static Response json(int status, byte[] body) {
      return new Response(status, "application/json", body);
    }

    /** A plain-text response. */
    public static Response text(int status, String body) {
      return new Response(status, "text/plain; charset=utf-8", body.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** A client error: answered with status 400 and the message as one line. */
  public static final class BadRequest extends Exception {
    private static final long serialVersionUID = 1L;

    /** Creates the error with a one-line message. */
    public BadRequest(String message) {
      super(message);
    }
  }

  private final HttpServer server;
  private final ExecutorService executor;

  private HttpService(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
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
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
    try {
      executor.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Describes an {@link HttpService}. */
  public static final class Builder {
    private final InetSocketAddress address;
    private final Map<String, Map<String, Handler>> routes = new LinkedHashMap<>();
    private @Nullable KeyManager keyManager;
    private int maxBodyBytes = 1 << 20;
    private int threads = 4;
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

    /** Worker threads (default 4). */
    public Builder threads(int value) {
      this.threads = value;
      return this;
    }

    /** A name for the worker threads and logs. */
    public Builder name(String value) {
      this.name = value;
      return this;
    }

    /** Routes {@code method path} to {@code handler}. */
    public Builder route(String method, String path, Handler handler) {
      routes.computeIfAbsent(path, p -> new LinkedHashMap<>()).put(method, handler);
      return this;
    }

    /**
     * Binds and starts the server.
     *
     * @throws IOException when the address cannot be bound
     */
    public HttpService start() throws IOException {
      HttpServer server;
      if (keyManager != null) {
        HttpsServer https = HttpsServer.create(address, 64);
        try {
          SSLContext context = SSLContext.getInstance("TLS");
          context.init(new KeyManager[] {keyManager}, null, null);
          https.setHttpsConfigurator(new HttpsConfigurator(context));
        } catch (GeneralSecurityException e) {
          throw new IOException("cannot set up TLS: " + e.getMessage(), e);
        }
        server = https;
      } else {
        server = HttpServer.create(address, 64);
      }
      ExecutorService executor =
          Executors.newFixedThreadPool(
              threads,
              r -> {
                Thread t = new Thread(r, "vgpu-" + name);
                t.setDaemon(true);
                return t;
              });
      server.setExecutor(executor);
      Map<String, Map<String, Handler>> table = Map.copyOf(routes);
      int limit = maxBodyBytes;
      String serverName = name;
      server.createContext("/", exchange -> serve(exchange, table, limit, serverName));
      server.start();
      return new HttpService(server, executor);
    }
  }

  private static void serve(HttpExchange exchange, Map<String, Map<String, Handler>> routes, int limit, String name)
      throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getPath();
      Map<String, Handler> byMethod = routes.get(path);
      if (byMethod == null) {
        send(exchange, Response.text(404, "no such path: " + path + "\n"));
        return;
      }
      Handler handler = byMethod.get(exchange.getRequestMethod());
      if (handler == null) {
        exchange.getResponseHeaders().set("Allow", String.join(", ", byMethod.keySet()));
        send(exchange, Response.text(405, exchange.getRequestMethod() + " is not allowed on " + path + "\n"));
        return;
      }
      byte[] body = readLimited(exchange.getRequestBody(), limit);
      if (body == null) {
        send(exchange, Response.text(400, "request body exceeds " + limit + " bytes\n"));
        return;
      }
      Response response;
      try {
        response = handler.handle(new Request(exchange.getRequestMethod(), path, body));
      } catch (BadRequest e) {
        response = Response.text(400, oneLine(e.getMessage()) + "\n");
      } catch (Exception e) {
        LOG.warn("{} {} {} failed: {}", name, exchange.getRequestMethod(), path, oneLine(String.valueOf(e)));
        LOG.debug("{} {} failure detail", name, path, e);
        response = Response.text(500, "internal error: " + oneLine(String.valueOf(e.getMessage())) + "\n");
      }
      send(exchange, response);
    }
  }

  /** Reads at most {@code limit} bytes; {@code null} when the body is longer. */
  private static byte @Nullable [] readLimited(InputStream in, int limit) throws IOException {
    byte[] body = in.readNBytes(limit + 1);
    // An oversized body is not drained: closing the exchange drops the connection instead.
    return body.length > limit ? null : body;
  }

  private static void send(HttpExchange exchange, Response response) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", response.contentType());
    exchange.sendResponseHeaders(response.status(), response.body().length == 0 ? -1 : response.body().length);
    if (response.body().length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(response.body());
      }
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
