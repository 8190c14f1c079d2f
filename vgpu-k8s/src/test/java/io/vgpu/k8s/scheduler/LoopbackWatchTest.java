package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

class LoopbackWatchTest {
  @Test
  void acceptsTheKeyOfRfc6455sExample() {
    assertThat(LoopbackWatch.acceptKey("dGhlIHNhbXBsZSBub25jZQ==")).isEqualTo("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  }

  @Test
  void answersTheUpgradeThenSendsEachEventAsOneUnmaskedTextFrame() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    LoopbackWatch watch = LoopbackWatch.accept("dGhlIHNhbXBsZSBub25jZQ==", new ByteArrayInputStream(new byte[0]), out, () -> {}, "test-send");
    String head = out.toString(StandardCharsets.US_ASCII);
    assertThat(head).isEqualTo("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
    out.reset();

    watch.send("{\"type\":\"ADDED\"}");
    watch.send("x".repeat(300));

    // Written by the watch's own thread, in the order queued.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (out.size() < 22 + 300 && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    watch.close();
    byte[] frames = out.toByteArray();
    assertThat(frames[0] & 0xFF).isEqualTo(0x81);
    assertThat(frames[1]).isEqualTo((byte) 16);
    assertThat(new String(frames, 2, 16, StandardCharsets.UTF_8)).isEqualTo("{\"type\":\"ADDED\"}");
    // 126: a 16-bit length follows, 300.
    assertThat(frames[18] & 0xFF).isEqualTo(0x81);
    assertThat(frames[19] & 0xFF).isEqualTo(126);
    assertThat(((frames[20] & 0xFF) << 8) | (frames[21] & 0xFF)).isEqualTo(300);
    assertThat(frames).hasSize(22 + 300);
  }

  @Test
  void answersAMaskedPingWithAPongAndACloseWithAClose() throws IOException {
    byte[] mask = {1, 2, 3, 4};
    ByteArrayOutputStream client = new ByteArrayOutputStream();
    client.write(masked(0x9, "hi".getBytes(StandardCharsets.US_ASCII), mask));
    client.write(masked(0x8, new byte[] {0x03, (byte) 0xE8}, mask));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    LoopbackWatch watch = LoopbackWatch.accept("k", new ByteArrayInputStream(client.toByteArray()), out, () -> {}, "test-send");
    out.reset();

    watch.serve();

    assertThat(out.toByteArray()).containsExactly(0x8A, 2, 'h', 'i', 0x88, 2, 0x03, 0xE8 - 256);
  }

  @Test
  void aClosedWatchClosesItsConnectionAndRefusesEvents() throws IOException {
    AtomicBoolean closed = new AtomicBoolean();
    LoopbackWatch watch = LoopbackWatch.accept("k", new ByteArrayInputStream(new byte[0]), new ByteArrayOutputStream(), () -> closed.set(true), "test-send");

    watch.close();

    assertThat(closed).isTrue();
    assertThatThrownBy(() -> watch.send("{}")).isInstanceOf(IOException.class).hasMessage("the watch is closed");
  }

  @Test
  void aClientThatStopsReadingLosesItsWatchInsteadOfBlockingTheSender() throws IOException {
    OutputStream neverRead = new OutputStream() {
      @Override
      public void write(int b) {
        LockSupport.park();
      }
    };
    LoopbackWatch blocked = blockedWatch(neverRead);
    long start = System.nanoTime();

    assertThatThrownBy(() -> {
      for (int i = 0; i < 10_000; i++) {
        blocked.send("{}");
      }
    }).isInstanceOf(IOException.class).hasMessageContaining("events unread for 1000 ms");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    blocked.close();
  }

  /** A watch whose handshake is written and whose events then go to {@code events}. */
  private static LoopbackWatch blockedWatch(OutputStream events) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    OutputStream out = new OutputStream() {
      private boolean handshakeDone;

      @Override
      public void write(int b) throws IOException {
        (handshakeDone ? events : head).write(b);
      }

      @Override
      public void flush() {
        handshakeDone = true;
      }
    };
    return LoopbackWatch.accept("k", new ByteArrayInputStream(new byte[0]), out, () -> {}, "test-send-blocked");
  }

  @Test
  void aFrameCutShortEndsTheWatchWithAReason() throws IOException {
    LoopbackWatch watch = LoopbackWatch.accept("k", new ByteArrayInputStream(new byte[] {(byte) 0x89, (byte) 0x85, 1, 2}), new ByteArrayOutputStream(), () -> {}, "test-send");

    assertThatThrownBy(watch::serve).isInstanceOf(IOException.class).hasMessageContaining("the connection ended inside a frame");
  }

  private static byte[] masked(int opcode, byte[] payload, byte[] mask) {
    byte[] frame = new byte[6 + payload.length];
    frame[0] = (byte) (0x80 | opcode);
    frame[1] = (byte) (0x80 | payload.length);
    System.arraycopy(mask, 0, frame, 2, 4);
    for (int i = 0; i < payload.length; i++) {
      frame[6 + i] = (byte) (payload[i] ^ mask[i & 3]);
    }
    return frame;
  }
}
