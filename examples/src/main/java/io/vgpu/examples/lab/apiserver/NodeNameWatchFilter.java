package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.ByteString;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import io.vgpu.k8s.pod.PodJson;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A pod watch with the field selector {@code spec.nodeName=<node>}, as the API server serves it: of the
 * unfiltered watch's events it passes those about pods on the node, turns a pod's arrival on the node
 * into ADDED and its departure (or deletion) into DELETED, and drops the rest.
 */
final class NodeNameWatchFilter extends WebSocketListener {
  private final WebSocketListener inner;
  private final String node;
  private final Set<String> sent = new HashSet<>();
  private WebSocket wrapped;
  private WebSocket original;

  NodeNameWatchFilter(WebSocketListener inner, String node) {
    this.inner = inner;
    this.node = node;
  }

  private synchronized WebSocket wrap(WebSocket socket) {
    if (original != socket) {
      original = socket;
      wrapped = new Filtering(socket);
    }
    return wrapped;
  }

  @Override
  public void onBeforeAccept(WebSocket webSocket, Response response) {
    inner.onBeforeAccept(wrap(webSocket), response);
  }

  @Override
  public void onOpen(WebSocket webSocket, Response response) {
    inner.onOpen(wrap(webSocket), response);
  }

  @Override
  public void onMessage(WebSocket webSocket, String text) {
    inner.onMessage(wrap(webSocket), text);
  }

  @Override
  public void onMessage(WebSocket webSocket, ByteString bytes) {
    inner.onMessage(wrap(webSocket), bytes);
  }

  @Override
  public void onMessage(WebSocket webSocket, byte[] bytes) {
    inner.onMessage(wrap(webSocket), bytes);
  }

  @Override
  public void onPing(WebSocket webSocket, byte[] bytes) {
    inner.onPing(wrap(webSocket), bytes);
  }

  @Override
  public void onClosing(WebSocket webSocket, int code, String reason) {
    inner.onClosing(wrap(webSocket), code, reason);
  }

  @Override
  public void onClosed(WebSocket webSocket, int code, String reason) {
    inner.onClosed(wrap(webSocket), code, reason);
  }

  @Override
  public void onFailure(WebSocket webSocket, Throwable t, Response response) {
    inner.onFailure(wrap(webSocket), t, response);
  }

  /** The event to send for an unfiltered one, or null to drop it. */
  private synchronized String filter(String text) {
    JsonNode event;
    try {
      event = PodJson.mapper().readTree(text);
    } catch (JacksonException e) {
      return text;
    }
    String type = event.path("type").asString("");
    JsonNode object = event.path("object");
    if (!(event instanceof ObjectNode out) || !object.isObject() || !(type.equals("ADDED") || type.equals("MODIFIED") || type.equals("DELETED"))) {
      return text;
    }
    String uid = object.path("metadata").path("uid").asString("");
    boolean here = node.equals(object.path("spec").path("nodeName").asString(""));
    boolean known = sent.contains(uid);
    if (here && !type.equals("DELETED")) {
      sent.add(uid);
      out.put("type", known ? "MODIFIED" : "ADDED");
      return out.toString();
    }
    if (known) {
      sent.remove(uid);
      out.put("type", "DELETED");
      return out.toString();
    }
    return null;
  }

  /** The socket the unfiltered watch writes to. */
  private final class Filtering implements WebSocket {
    private final WebSocket socket;

    Filtering(WebSocket socket) {
      this.socket = socket;
    }

    @Override
    public RecordedRequest request() {
      return socket.request();
    }

    @Override
    public boolean send(String text) {
      String out = filter(text);
      return out == null || socket.send(out);
    }

    @Override
    public boolean send(byte[] bytes) {
      String out = filter(new String(bytes, StandardCharsets.UTF_8));
      return out == null || socket.send(out.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public boolean close(int code, String reason) {
      return socket.close(code, reason);
    }
  }
}
