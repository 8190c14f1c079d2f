package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.mockwebserver.http.RecordedRequest;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A watch's end reaches fabric8's listener off the thread that reports it (the server's event loop). */
class FilteringWatchListenerTest {
  private static final WebSocket SOCKET = new WebSocket() {
    @Override
    public RecordedRequest request() {
      return null;
    }

    @Override
    public boolean send(String text) {
      return true;
    }

    @Override
    public boolean send(byte[] bytes) {
      return true;
    }

    @Override
    public boolean close(int code, String reason) {
      return true;
    }
  };

  @Test
  void aWatchsEndIsHandedOnWhileTheReportingThreadGoesOn() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch ended = new CountDownLatch(2);
    List<String> threads = new CopyOnWriteArrayList<>();
    // fabric8's listener blocks in its end handlers until its sender is done
    WebSocketListener fabric8 = new WebSocketListener() {
      @Override
      public void onClosed(WebSocket webSocket, int code, String reason) {
        await(release);
        threads.add(Thread.currentThread().getName());
        ended.countDown();
      }

      @Override
      public void onFailure(WebSocket webSocket, Throwable t, Response response) {
        await(release);
        threads.add(Thread.currentThread().getName());
        ended.countDown();
      }
    };
    FilteringWatchListener watch = FilteringWatchListener.unfiltered(fabric8);
    long start = System.nanoTime();
    watch.onClosed(SOCKET, 1000, "closed by the client");
    watch.onFailure(SOCKET, new IllegalStateException("connection reset"), null);
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("the reporting thread is not held").isLessThan(1_000);
    release.countDown();
    assertThat(ended.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(threads).containsOnly("lab-api-watch-end");
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
