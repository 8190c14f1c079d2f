package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.MockWebServer;
import io.vertx.core.http.HttpServerConfig;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * Makes the stand-in's WebSocket watches uncompressed, as a real API server's are. kube-apiserver serves
 * a watch over WebSocket with a library that knows no extensions, so it never agrees to the {@code
 * permessage-deflate} that OkHttp offers on every upgrade; fabric8's mock server (Vert.x underneath)
 * agrees, and then deflates every watch event it sends and every client inflates it. In a 200-pod burst
 * that was the stand-ins' largest first-time compilations (Netty's deflate encoder) and a few percent of
 * their CPU, and the scheduler inflated events no cluster would have compressed.
 *
 * <p>The mock server builds its Vert.x server with options of its own and offers no setting for this, so
 * the server's configuration is reached by reflection and its WebSocket compression turned off; Vert.x
 * reads it for each new connection. {@code ApiServerStandInTest} holds a watch's handshake to no
 * extension, so that an upgrade of either library that moves these fields fails there.
 */
final class UncompressedWatches {
  /** How many objects deep from the mock server the Vert.x configuration is looked for. */
  private static final int DEPTH = 4;

  private UncompressedWatches() {}

  /**
   * Turns off per-message and per-frame WebSocket compression for the connections {@code server}
   * accepts from now on.
   *
   * @throws IllegalStateException when no Vert.x server configuration is found behind {@code server}
   */
  static void apply(MockWebServer server) {
    List<HttpServerConfig> configs = new ArrayList<>();
    collect(server, DEPTH, Collections.newSetFromMap(new IdentityHashMap<>()), configs);
    if (configs.isEmpty()) {
      throw new IllegalStateException("no Vert.x HttpServerConfig found behind fabric8's MockWebServer: its watches would be compressed, as no API server's are");
    }
    for (HttpServerConfig config : configs) {
      config.getWebSocketConfig().setUsePerMessageCompression(false).setUsePerFrameCompression(false);
    }
  }

  private static void collect(Object object, int depth, Set<Object> seen, List<HttpServerConfig> out) {
    if (object instanceof HttpServerConfig config) {
      out.add(config);
      return;
    }
    if (depth == 0 || !seen.add(object) || !reachable(object.getClass())) {
      return;
    }
    for (Class<?> type = object.getClass(); type != null && type != Object.class; type = type.getSuperclass()) {
      for (Field field : type.getDeclaredFields()) {
        if (Modifier.isStatic(field.getModifiers()) || field.getType().isPrimitive()) {
          continue;
        }
        Object value;
        try {
          field.setAccessible(true);
          value = field.get(object);
        } catch (RuntimeException | IllegalAccessException e) {
          continue;
        }
        if (value != null) {
          collect(value, depth - 1, seen, out);
        }
      }
    }
  }

  /** Only the mock server's and Vert.x's own objects are walked: not the JDK's, nor Netty's event loops. */
  private static boolean reachable(Class<?> type) {
    String name = type.getName();
    return name.startsWith("io.fabric8.mockwebserver.") || name.startsWith("io.vertx.core.http.");
  }
}
