package io.vgpu.k8s.server;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.io.AbstractEndPoint;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.Callback;

/**
 * Notices that the client of a request still being answered went away. While a handler works, Jetty
 * reads nothing from the connection, so a client that gives up and closes it goes unseen until the
 * answer is written into the void; here the connection is watched for its end of input meanwhile, and
 * {@link #gone()} completes when it comes (or the connection fails). Watching stops before the answer
 * is sent, so the connection carries its next request as before.
 *
 * <p>A client that sends bytes before its answer (a pipelined request) is no HTTP/1.1 client this
 * server serves (kube-scheduler never pipelines): the bytes cannot be put back, so the watch stops and
 * {@link #pipelined()} says that the connection must close after the answer.
 */
final class ClientDeparture {
  private final EndPoint endPoint;
  private final CompletableFuture<Void> gone = new CompletableFuture<>();
  private final Callback readable = Callback.from(this::onReadable, this::onFailed);
  private boolean watching;
  private boolean interested;
  private boolean pipelined;

  ClientDeparture(EndPoint endPoint) {
    this.endPoint = endPoint;
  }

  /** Completes when the client is gone; never fails. */
  CompletableFuture<Void> gone() {
    return gone;
  }

  /** Starts watching: the request has arrived whole and its answer is pending. */
  synchronized void start() {
    watching = true;
    interest();
  }

  /** Stops watching, before the answer is written. */
  synchronized void stop() {
    watching = false;
    if (interested && endPoint instanceof AbstractEndPoint e) {
      // Withdrawn, so that the connection can take up reading its next request itself.
      e.getFillInterest().onFail(new AnswerReady());
    }
    interested = false;
  }

  /** Withdraws the watch's read interest: sent once per request, so without a stack trace, which says nothing here. */
  private static final class AnswerReady extends CancellationException {
    private static final long serialVersionUID = 1L;

    AnswerReady() {
      super("the answer is ready");
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  }

  /** Whether the client sent bytes before its answer: the connection must close after it. */
  synchronized boolean pipelined() {
    return pipelined;
  }

  private void interest() {
    if (watching && !interested) {
      interested = endPoint.tryFillInterested(readable);
    }
  }

  private void onReadable() {
    synchronized (this) {
      interested = false;
      if (!watching) {
        return;
      }
    }
    int read;
    try {
      read = endPoint.fill(BufferUtil.allocate(64));
    } catch (IOException e) {
      read = -1;
    }
    synchronized (this) {
      if (read < 0) {
        watching = false;
      } else if (read > 0) {
        watching = false;
        pipelined = true;
        return;
      } else {
        interest();
        return;
      }
    }
    gone.complete(null);
  }

  private void onFailed(Throwable failure) {
    synchronized (this) {
      interested = false;
      if (!watching) {
        return;
      }
      if (failure instanceof TimeoutException) {
        // The connection was idle for its idle timeout: the client may still be waiting.
        interest();
        return;
      }
      watching = false;
    }
    gone.complete(null);
  }
}
