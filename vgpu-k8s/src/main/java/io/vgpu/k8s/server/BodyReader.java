package io.vgpu.k8s.server;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.thread.Invocable;

/**
 * Reads a request's body into memory as its chunks arrive, on the thread that read them from the
 * connection. The reader tells Jetty that its callback never blocks; Jetty's own reader does not say
 * so, and Jetty then hands every read after the first to another thread, which must in turn wake the
 * selector to wait for the next bytes. A kube-scheduler filter call arrives in several TLS records, so
 * that came to a few thread wake-ups per call.
 */
final class BodyReader implements Runnable, Invocable {
  /** What a body announced without a length starts with; it doubles as it grows. */
  private static final int UNKNOWN_LENGTH_START = 4096;

  private final Request request;
  private final int maxBytes;
  private final CompletableFuture<byte[]> body = new CompletableFuture<>();
  private byte[] bytes;
  private int size;

  private BodyReader(Request request, int maxBytes) {
    this.request = request;
    this.maxBytes = maxBytes;
    long announced = request.getLength();
    this.bytes = new byte[announced >= 0 && announced <= maxBytes ? (int) announced : Math.min(UNKNOWN_LENGTH_START, maxBytes)];
  }

  /**
   * The body of {@code request}; complete at once when it came whole with the head. It fails with {@link
   * BodyTooLarge} past {@code maxBytes}, and with the connection's failure when it fails. A caller that
   * completes the future itself (a timeout) stops the reading.
   */
  static CompletableFuture<byte[]> read(Request request, int maxBytes) {
    BodyReader reader = new BodyReader(request, maxBytes);
    reader.run();
    return reader.body;
  }

  @Override
  public InvocationType getInvocationType() {
    return InvocationType.NON_BLOCKING;
  }

  @Override
  public void run() {
    while (!body.isDone()) {
      Content.Chunk chunk = request.read();
      if (chunk == null) {
        request.demand(this);
        return;
      }
      try {
        if (Content.Chunk.isFailure(chunk)) {
          body.completeExceptionally(chunk.getFailure());
          return;
        }
        ByteBuffer buffer = chunk.getByteBuffer();
        int length = buffer.remaining();
        if (length > maxBytes - size) {
          body.completeExceptionally(new BodyTooLarge(maxBytes));
          return;
        }
        if (length > bytes.length - size) {
          bytes = Arrays.copyOf(bytes, (int) Math.min(maxBytes, Math.max((long) bytes.length * 2, (long) size + length)));
        }
        buffer.get(bytes, size, length);
        size += length;
        if (chunk.isLast()) {
          body.complete(size == bytes.length ? bytes : Arrays.copyOf(bytes, size));
          return;
        }
      } finally {
        chunk.release();
      }
    }
  }

  /** A body longer than the server takes. */
  static final class BodyTooLarge extends RuntimeException {
    private static final long serialVersionUID = 1L;

    BodyTooLarge(int maxBytes) {
      super("request body exceeds " + maxBytes + " bytes", null, false, false);
    }
  }
}
