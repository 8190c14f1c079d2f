package io.vgpu.k8s.scheduler;

import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One watch that {@link LoopbackApi} serves over WebSocket (RFC 6455), as kube-apiserver serves the
 * watches of fabric8's informers: each watch event is one unmasked text frame, with no extension (an API
 * server agrees to none, so none is offered back). The client's frames are read only to answer a ping
 * and a close.
 *
 * <p>Events are queued and written by a thread of the watch's own, so that a client that stops reading
 * costs the warm-up its watch, not its start-up: an event that finds the queue full for {@value
 * #QUEUE_WAIT_MILLIS} ms is refused, and the caller drops the watch.
 */
final class LoopbackWatch implements AutoCloseable {
  /** The GUID RFC 6455 appends to the client's key before hashing it. */
  private static final String ACCEPT_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  private static final int TEXT = 0x1;
  private static final int CLOSE = 0x8;
  private static final int PING = 0x9;
  private static final int PONG = 0xA;
  /** The largest frame a client may send here: only pings and closes are expected, of 125 bytes at most. */
  private static final int LARGEST_CLIENT_FRAME = 64 * 1024;
  /** Events queued for the client at most. */
  private static final int QUEUED_AT_MOST = 4096;
  /** How long an event waits for room in a full queue before the watch is given up. */
  private static final long QUEUE_WAIT_MILLIS = 1000;

  private final InputStream in;
  private final OutputStream out;
  private final Closeable connection;
  private final BlockingQueue<byte[]> queued = new ArrayBlockingQueue<>(QUEUED_AT_MOST);
  private final Thread sender;
  private volatile boolean closed;

  private LoopbackWatch(InputStream in, OutputStream out, Closeable connection, String name) {
    this.in = in;
    this.out = out;
    this.connection = connection;
    this.sender = new Thread(this::sendQueued, name);
    sender.setDaemon(true);
    sender.start();
  }

  /**
   * Answers a WebSocket upgrade whose {@code Sec-WebSocket-Key} is {@code key}, and returns the watch
   * that the connection now is; {@code connection} is closed with the watch, and its sending thread is
   * named {@code name}.
   */
  static LoopbackWatch accept(String key, InputStream in, OutputStream out, Closeable connection, String name) throws IOException {
    String head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + acceptKey(key) + "\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return new LoopbackWatch(in, out, connection, name);
  }

  /** The {@code Sec-WebSocket-Accept} of a client's {@code Sec-WebSocket-Key}. */
  static String acceptKey(String key) {
    try {
      byte[] sha1 = MessageDigest.getInstance("SHA-1").digest((key.trim() + ACCEPT_GUID).getBytes(StandardCharsets.US_ASCII));
      return Base64.getEncoder().encodeToString(sha1);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-1, which every JVM has", e);
    }
  }

  /**
   * Queues one watch event for the client.
   *
   * @throws IOException when the client has left events unread for {@value #QUEUE_WAIT_MILLIS} ms, or
   *     the watch is closed
   */
  void send(String event) throws IOException {
    if (closed || !sender.isAlive()) {
      throw new IOException("the watch is closed");
    }
    try {
      if (!queued.offer(event.getBytes(StandardCharsets.UTF_8), QUEUE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
        throw new IOException("the watch's client left " + QUEUED_AT_MOST + " events unread for " + QUEUE_WAIT_MILLIS + " ms");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while queueing a watch event", e);
    }
  }

  /** Writes the queued events until the watch is closed or its connection fails. */
  private void sendQueued() {
    try {
      while (true) {
        byte[] event = queued.take();
        synchronized (this) {
          frame(TEXT, event);
        }
      }
    } catch (InterruptedException | IOException e) {
      // Closed, or the client went away: nothing more is sent.
    }
  }

  /** Stops sending and closes the connection. */
  @Override
  public void close() {
    closed = true;
    sender.interrupt();
    try {
      connection.close();
    } catch (IOException e) {
      // A connection that failed already: nothing is left to release.
    }
  }

  /**
   * Reads the client's frames until it closes the watch or the connection ends: a ping is answered with
   * a pong, a close with a close.
   */
  void serve() throws IOException {
    while (true) {
      int first = in.read();
      if (first < 0) {
        return;
      }
      int second = readByte();
      int opcode = first & 0x0F;
      long length = second & 0x7F;
      if (length == 126) {
        length = (readByte() << 8) | readByte();
      } else if (length == 127) {
        length = 0;
        for (int i = 0; i < 8; i++) {
          length = (length << 8) | readByte();
        }
      }
      if (length > LARGEST_CLIENT_FRAME) {
        throw new IOException("a client frame of " + length + " bytes, more than a watch's client sends");
      }
      byte[] mask = (second & 0x80) != 0 ? in.readNBytes(4) : null;
      byte[] payload = in.readNBytes((int) length);
      if (payload.length < length || (mask != null && mask.length < 4)) {
        throw new EOFException("the connection ended inside a frame");
      }
      if (mask != null) {
        for (int i = 0; i < payload.length; i++) {
          payload[i] ^= mask[i & 3];
        }
      }
      if (opcode == CLOSE) {
        synchronized (this) {
          frame(CLOSE, payload.length <= 125 ? payload : new byte[0]);
        }
        return;
      }
      if (opcode == PING) {
        synchronized (this) {
          frame(PONG, payload);
        }
      }
    }
  }

  private int readByte() throws IOException {
    int b = in.read();
    if (b < 0) {
      throw new EOFException("the connection ended inside a frame header");
    }
    return b;
  }

  private void frame(int opcode, byte[] payload) throws IOException {
    out.write(0x80 | opcode);
    int length = payload.length;
    if (length < 126) {
      out.write(length);
    } else if (length < 65_536) {
      out.write(126);
      out.write(length >>> 8);
      out.write(length);
    } else {
      out.write(127);
      for (int shift = 56; shift >= 0; shift -= 8) {
        out.write((int) ((long) length >>> shift));
      }
    }
    out.write(payload);
    out.flush();
  }
}
