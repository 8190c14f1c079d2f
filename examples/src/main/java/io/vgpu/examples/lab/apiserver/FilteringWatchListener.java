package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.ByteString;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

/**
 * A watch served from fabric8's unfiltered one, each event it writes passed through {@link #filter}:
 * for what the API server narrows down or rewrites and fabric8's mock does not. Its end (the client
 * closed it, or the connection broke) reaches fabric8's listener on a thread of its own, not on the
 * server's event loop: fabric8's listener waits there until its sender is done, and a sender in the
 * middle of a write needs the event loop to finish it, so on the loop the two waited for each other
 * (up to a minute, every other request of the server stalled, and Vert.x printing blocked-thread traces).
 */
abstract class FilteringWatchListener extends WebSocketListener {
  /** Hands watch ends to fabric8's listeners: daemon threads, made when needed and dropped when idle. */
  private static final Executor ENDS =
      Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "lab-api-watch-end");
        t.setDaemon(true);
        return t;
      });

  private final WebSocketListener inner;
  private WebSocket wrapped;
  private WebSocket original;

  FilteringWatchListener(WebSocketListener inner) {
    this.inner = inner;
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
    WebSocket socket = wrap(webSocket);
    ENDS.execute(() -> inner.onClosed(socket, code, reason));
  }

  @Override
  public void onFailure(WebSocket webSocket, Throwable t, Response response) {
    WebSocket socket = wrap(webSocket);
    ENDS.execute(() -> inner.onFailure(socket, t, response));
  }

  /** fabric8's watch as it is, only its end handed off the event loop. */
  static FilteringWatchListener unfiltered(WebSocketListener inner) {
    return new FilteringWatchListener(inner) {
      @Override
      String filter(String text) {
        return text;
      }
    };
  }

  /** The event to send for an unfiltered one ({@code text}, or a rewrite of it), or null to drop it. */
  abstract String filter(String text);

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
