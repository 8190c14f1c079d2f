package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.vgpu.k8s.server.HttpService;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.X509KeyManager;
import org.jspecify.annotations.Nullable;

/**
 * A private stand-in for the API server endpoints the scheduler uses per pod, on the loopback address,
 * and a client of its own that reaches it through the HTTP client the scheduler's client uses (fabric8's,
 * over OkHttp): the warm-up's writes and watches run the code that the scheduler's run, so that the
 * first burst does not compile it.
 *
 * <p>It accepts exactly the writes the scheduler makes per pod (the decision patch, the node lock, the
 * Binding, Events), to one made-up pod and node, and keeps nothing: each is answered as an API server
 * answers a success, with the body written echoed back. It lists nodes, pods and resource quotas from a
 * fixed set of objects and serves their watches over WebSocket, as kube-apiserver serves an informer's,
 * with the events {@link #emit} is given. Anything else is answered 404.
 *
 * <p>The client is built from an empty configuration, not the scheduler's: it has no credentials and
 * knows no other server, so nothing the warm-up writes can reach the cluster. With a key manager the
 * listener speaks TLS (the client then trusts whatever certificate it is shown, which is only ever this
 * listener's: its URL is fixed to it). The listener answers on 127.0.0.1 from a port the system chooses,
 * for as long as the warm-up runs.
 */
final class LoopbackApi implements AutoCloseable {
  /** The namespace of the pod the warm-up writes to. */
  static final String NAMESPACE = WarmUpObjects.NAMESPACE;
  /** The pod the warm-up's decision patches are sent to. */
  static final String POD = "warm-up-written";
  /** The node the warm-up's lock patches are sent to. */
  static final String NODE = "warm-up-node-00";
  /** The nodes' list and watch. */
  static final String NODES = "/api/v1/nodes";
  /** The pods' list and watch, of every namespace. */
  static final String PODS = "/api/v1/pods";
  /** The resource quotas' list and watch, of every namespace. */
  static final String QUOTAS = "/api/v1/resourcequotas";

  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);
  /** The longest request head or body read: the warm-up's writes are a few KB. */
  private static final int LARGEST_REQUEST = 1 << 20;
  private static final Map<String, String> LIST_KINDS = Map.of(NODES, "NodeList", PODS, "PodList", QUOTAS, "ResourceQuotaList");

  private final ServerSocket server;
  private final KubernetesClient client;
  private final AtomicInteger writes = new AtomicInteger();
  private final Map<String, Integer> writeRoutes;
  private final Map<String, String> lists = new HashMap<>();
  private final Map<String, List<LoopbackWatch>> watches = new ConcurrentHashMap<>();
  private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
  private final AtomicInteger connectionCount = new AtomicInteger();
  private volatile boolean closed;

  private LoopbackApi(ServerSocket server, boolean tls, Map<String, List<String>> objects) throws IOException {
    this.server = server;
    String pods = "/api/v1/namespaces/" + NAMESPACE;
    this.writeRoutes = Map.of(
        "PATCH " + pods + "/pods/" + POD, 200,
        "PATCH " + NODES + "/" + NODE, 200,
        "POST " + pods + "/bindings", 201,
        "POST " + pods + "/events", 201,
        "POST /api/v1/namespaces/" + WarmUpObjects.REFUSED_NAMESPACE + "/events", 201);
    for (Map.Entry<String, String> list : LIST_KINDS.entrySet()) {
      List<String> items = objects.getOrDefault(list.getKey(), List.of());
      lists.put(list.getKey(), "{\"kind\":\"" + list.getValue() + "\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[" + String.join(",", items) + "]}");
      watches.put(list.getKey(), new CopyOnWriteArrayList<>());
    }
    try {
      Config config = Config.empty();
      config.setMasterUrl((tls ? "https://" : "http://") + LoopbackExtender.address().getHostString() + ":" + server.getLocalPort() + "/");
      config.setTrustCerts(tls);
      config.setRequestTimeout((int) REQUEST_TIMEOUT.toMillis());
      this.client = new KubernetesClientBuilder().withConfig(config).build();
    } catch (RuntimeException e) {
      throw new IOException("the warm-up's API client cannot be built: " + HttpService.oneLine(e.getMessage()), e);
    }
    Thread acceptor = new Thread(this::acceptConnections, "warm-up-api-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Starts a plain-HTTP listener with nothing to list, and builds its client. */
  static LoopbackApi start() throws IOException {
    return start(null, Map.of());
  }

  /**
   * Starts the listener, speaking TLS with {@code keys} if given, and builds its client.
   *
   * @param objects the JSON of the objects each of {@link #NODES}, {@link #PODS} and {@link #QUOTAS}
   *     lists (none where absent)
   */
  static LoopbackApi start(@Nullable X509KeyManager keys, Map<String, List<String>> objects) throws IOException {
    ServerSocket server;
    if (keys != null) {
      try {
        SSLContext tls = SSLContext.getInstance("TLS");
        tls.init(new KeyManager[] {keys}, null, null);
        server = tls.getServerSocketFactory().createServerSocket();
      } catch (GeneralSecurityException e) {
        throw new IOException("the warm-up's API listener cannot speak TLS: " + HttpService.oneLine(e.getMessage()), e);
      }
    } else {
      server = new ServerSocket();
    }
    try {
      server.bind(new InetSocketAddress(LoopbackExtender.address().getAddress(), 0));
      return new LoopbackApi(server, keys != null, objects);
    } catch (IOException | RuntimeException e) {
      server.close();
      throw e;
    }
  }

  /** The client whose requests reach this listener only. */
  KubernetesClient client() {
    return client;
  }

  /** How many writes the listener has answered. */
  int writes() {
    return writes.get();
  }

  /** How many watches of {@code resource} ({@link #NODES}, {@link #PODS} or {@link #QUOTAS}) are open. */
  int watching(String resource) {
    List<LoopbackWatch> open = watches.get(resource);
    return open == null ? 0 : open.size();
  }

  /**
   * Sends a watch event to every open watch of {@code resource}; a watch whose connection has failed is
   * dropped.
   */
  void emit(String resource, String event) {
    List<LoopbackWatch> open = watches.get(resource);
    if (open == null) {
      throw new IllegalArgumentException("no watch of " + resource + " is served here");
    }
    for (LoopbackWatch watch : open) {
      try {
        watch.send(event);
      } catch (IOException e) {
        open.remove(watch);
        watch.close();
      }
    }
  }

  private void acceptConnections() {
    while (!closed) {
      Socket socket;
      try {
        socket = server.accept();
      } catch (IOException e) {
        return;
      }
      connections.add(socket);
      Thread connection = new Thread(() -> serve(socket), "warm-up-api-" + connectionCount.incrementAndGet());
      connection.setDaemon(true);
      connection.start();
    }
  }

  /** Answers the connection's requests in turn until it ends, or becomes a watch and serves that. */
  private void serve(Socket socket) {
    try (socket) {
      InputStream in = new BufferedInputStream(socket.getInputStream());
      OutputStream out = new BufferedOutputStream(socket.getOutputStream());
      while (!closed) {
        Request request = Request.read(in);
        if (request == null) {
          return;
        }
        String resource = request.path();
        if (request.method().equals("GET") && lists.containsKey(resource)) {
          if (!request.watch()) {
            respond(out, 200, lists.get(resource));
            continue;
          }
          String key = request.headers().get("sec-websocket-key");
          if (key == null) {
            respond(out, 400, status(400, "BadRequest", "watches here are served over WebSocket only"));
            continue;
          }
          List<LoopbackWatch> open = watches.get(resource);
          try (LoopbackWatch watch = LoopbackWatch.accept(key, in, out, socket, Thread.currentThread().getName() + "-send")) {
            open.add(watch);
            try {
              watch.serve();
            } finally {
              open.remove(watch);
            }
          }
          return;
        }
        Integer written = writeRoutes.get(request.method() + " " + resource);
        if (written != null) {
          writes.incrementAndGet();
          respond(out, written, new String(request.body(), StandardCharsets.UTF_8));
        } else {
          respond(out, 404, status(404, "NotFound", request.method() + " " + resource + " is not served here"));
        }
      }
    } catch (IOException e) {
      // The client went away, or the listener is closing: the connection ends either way.
    } finally {
      connections.remove(socket);
    }
  }

  private static void respond(OutputStream out, int code, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    String head = "HTTP/1.1 " + code + " " + reason(code) + "\r\nContent-Type: application/json\r\nContent-Length: " + bytes.length + "\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.write(bytes);
    out.flush();
  }

  private static String reason(int code) {
    return switch (code) {
      case 200 -> "OK";
      case 201 -> "Created";
      case 400 -> "Bad Request";
      default -> "Not Found";
    };
  }

  /** A {@code Status} as an API server answers a failed request; the message is the listener's own. */
  private static String status(int code, String reason, String message) {
    return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"" + message.replace("\"", "'") + "\",\"reason\":\"" + reason
        + "\",\"code\":" + code + "}";
  }

  @Override
  public void close() {
    closed = true;
    client.close();
    try {
      server.close();
    } catch (IOException e) {
      // Closing a listener that failed already: nothing is left to release.
    }
    for (Socket socket : connections) {
      try {
        socket.close();
      } catch (IOException e) {
        // As above.
      }
    }
  }

  /** One HTTP/1.1 request as OkHttp sends it: a head, then a body of a length given or chunked. */
  private record Request(String method, String path, boolean watch, Map<String, String> headers, byte[] body) {
    /** The next request on the connection, or null where it ended between requests. */
    static @Nullable Request read(InputStream in) throws IOException {
      String line = line(in);
      if (line == null) {
        return null;
      }
      String[] parts = line.split(" ", 3);
      if (parts.length < 3) {
        throw new IOException("not an HTTP request line: " + line);
      }
      Map<String, String> headers = new HashMap<>();
      for (String header = line(in); header != null && !header.isEmpty(); header = line(in)) {
        int colon = header.indexOf(':');
        if (colon > 0) {
          headers.put(header.substring(0, colon).trim().toLowerCase(Locale.ROOT), header.substring(colon + 1).trim());
        }
      }
      String target = parts[1];
      int query = target.indexOf('?');
      String path = query < 0 ? target : target.substring(0, query);
      boolean watch = query >= 0 && List.of(target.substring(query + 1).split("&")).contains("watch=true");
      return new Request(parts[0], path, watch, headers, body(in, headers));
    }

    private static byte[] body(InputStream in, Map<String, String> headers) throws IOException {
      String length = headers.get("content-length");
      if (length != null) {
        int n = Integer.parseInt(length);
        if (n < 0 || n > LARGEST_REQUEST) {
          throw new IOException("a request body of " + length + " bytes");
        }
        return in.readNBytes(n);
      }
      if (!"chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
        return new byte[0];
      }
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      while (true) {
        String size = line(in);
        if (size == null) {
          throw new IOException("the connection ended inside a chunked body");
        }
        int semicolon = size.indexOf(';');
        int n = Integer.parseInt((semicolon < 0 ? size : size.substring(0, semicolon)).trim(), 16);
        if (n == 0) {
          for (String trailer = line(in); trailer != null && !trailer.isEmpty(); trailer = line(in)) {
            // Trailers are not used here.
          }
          return body.toByteArray();
        }
        if (body.size() + n > LARGEST_REQUEST) {
          throw new IOException("a chunked request body over " + LARGEST_REQUEST + " bytes");
        }
        body.write(in.readNBytes(n));
        line(in);
      }
    }

    /** A line ended by CRLF, without it; null at the end of the stream. */
    private static @Nullable String line(InputStream in) throws IOException {
      StringBuilder line = new StringBuilder();
      for (int b = in.read(); ; b = in.read()) {
        if (b < 0) {
          return line.length() == 0 ? null : line.toString();
        }
        if (b == '\n') {
          int end = line.length();
          return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
        }
        if (line.length() >= LARGEST_REQUEST) {
          throw new IOException("a request line over " + LARGEST_REQUEST + " bytes");
        }
        line.append((char) b);
      }
    }
  }
}
