package io.vgpu.k8s.server;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.server.ConnectionMetaData;
import org.eclipse.jetty.util.thread.Scheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bounds how long a client may take to deliver a request. The server parses headers without holding a
 * thread, and its idle timeout only bounds the pause between two bytes, so a client trickling a byte
 * at a time would keep its connection for hours. Every connection must therefore deliver its first
 * request within the timeout of opening, and each later one within the timeout of the previous
 * response (a connection merely idle between requests is left to the idle timeout). The body is
 * bounded separately, by the route's own deadline.
 */
final class RequestDeadlines implements Connection.Listener {
  private static final Logger LOG = LoggerFactory.getLogger(RequestDeadlines.class);

  /** What a connection has done since its last response. */
  private static final class State {
    volatile long sinceNanos = System.nanoTime();
    volatile long bytesAtResponse;
    volatile boolean served;
    final AtomicInteger inFlight = new AtomicInteger();
  }

  private final long timeoutNanos;
  private final Scheduler scheduler;
  private final String name;
  private final Map<Connection, State> connections = new ConcurrentHashMap<>();
  private volatile boolean running = true;

  RequestDeadlines(Duration timeout, Scheduler scheduler, String name) {
    this.timeoutNanos = timeout.toNanos();
    this.scheduler = scheduler;
    this.name = name;
  }

  /** Starts the periodic check. */
  void start() {
    schedule();
  }

  /** Stops it. */
  void stop() {
    running = false;
  }

  private void schedule() {
    if (running) {
      scheduler.schedule(this::check, Math.max(timeoutNanos / 4, TimeUnit.MILLISECONDS.toNanos(20)), TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void onOpened(Connection connection) {
    // Only the HTTP connection carries requests; under TLS the connection below it (the TLS one) does not.
    if (connection instanceof ConnectionMetaData) {
      connections.put(connection, new State());
    }
  }

  @Override
  public void onClosed(Connection connection) {
    connections.remove(connection);
  }

  /** A request on {@code connection} arrived complete enough to be routed. */
  void started(Connection connection) {
    State s = connections.get(connection);
    if (s != null) {
      s.inFlight.incrementAndGet();
    }
  }

  /** Its response was sent (or it failed). */
  void finished(Connection connection) {
    State s = connections.get(connection);
    if (s != null) {
      s.bytesAtResponse = connection.getBytesIn();
      s.sinceNanos = System.nanoTime();
      s.served = true;
      s.inFlight.decrementAndGet();
    }
  }

  private void check() {
    try {
      long now = System.nanoTime();
      for (Map.Entry<Connection, State> e : connections.entrySet()) {
        State s = e.getValue();
        if (s.inFlight.get() > 0 || now - s.sinceNanos < timeoutNanos) {
          continue;
        }
        Connection c = e.getKey();
        // Nothing sent since the last response: an idle keep-alive connection, not a slow request.
        if (s.served && c.getBytesIn() == s.bytesAtResponse) {
          continue;
        }
        LOG.debug("{}: closing {}: no complete request within {} ms", name, c.getEndPoint().getRemoteSocketAddress(), timeoutNanos / 1_000_000);
        connections.remove(c);
        c.getEndPoint().close();
      }
    } finally {
      schedule();
    }
  }
}
