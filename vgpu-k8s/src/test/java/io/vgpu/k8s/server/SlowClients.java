package io.vgpu.k8s.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Slow clients on real sockets: a third connect and send nothing, a third trickle their request
 * headers one byte every 100 ms, a third send complete headers and trickle the announced body. A
 * background thread keeps them trickling until closed, for at most 60 s.
 */
final class SlowClients implements AutoCloseable {
  private static final byte[] HEADERS = "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
      .getBytes(StandardCharsets.US_ASCII);
  private static final byte[] BODY_HEADERS = "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
      .getBytes(StandardCharsets.US_ASCII);

  private final List<Socket> sockets = new ArrayList<>();
  private final List<Boolean> open = new ArrayList<>();
  private final Thread trickler;
  private volatile boolean stopped;

  SlowClients(int port, int count) throws IOException {
    for (int i = 0; i < count; i++) {
      Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
      s.setSoTimeout(1);
      sockets.add(s);
      open.add(true);
      if (i % 3 == 2) {
        s.getOutputStream().write(BODY_HEADERS);
        s.getOutputStream().write('{');
      }
    }
    trickler = new Thread(this::trickle, "slow-clients");
    trickler.setDaemon(true);
  }

  void start() {
    trickler.start();
  }

  /** How many connections the server has not closed yet. */
  synchronized int stillOpen() {
    int n = 0;
    for (boolean b : open) {
      n += b ? 1 : 0;
    }
    return n;
  }

  private void trickle() {
    long end = System.nanoTime() + 60_000_000_000L;
    int step = 0;
    while (!stopped && System.nanoTime() < end) {
      for (int i = 0; i < sockets.size(); i++) {
        Socket s = sockets.get(i);
        synchronized (this) {
          if (!open.get(i)) {
            continue;
          }
        }
        try {
          OutputStream out = s.getOutputStream();
          if (i % 3 == 1) {
            out.write(HEADERS[step % HEADERS.length]);
          } else if (i % 3 == 2) {
            out.write(' ');
          }
          if (closedByServer(s.getInputStream())) {
            markClosed(i);
          }
        } catch (IOException e) {
          markClosed(i);
        }
      }
      step++;
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Whether the server closed the connection (or answered, which for these requests means it gave up). */
  private static boolean closedByServer(InputStream in) throws IOException {
    try {
      in.read(); // a byte of a response or the end of the stream: either way the server is done with it
      return true;
    } catch (java.net.SocketTimeoutException e) {
      return false;
    }
  }

  private synchronized void markClosed(int i) {
    open.set(i, false);
  }

  @Override
  public void close() throws Exception {
    stopped = true;
    trickler.interrupt();
    trickler.join(5000);
    for (Socket s : sockets) {
      s.close();
    }
  }
}
