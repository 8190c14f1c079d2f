package io.vgpu.k8s.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TextExpositionTest {

  @Test
  void manyPointsAcrossChunksAndAPieceLargerThanAChunkReadAsTheClientLibraryWritesThem() throws Exception {
    TextExposition.Family family = new TextExposition.Family("a_gauge", "Help with \\ and\nnewline, ü", "card", "model");
    GaugeSnapshot.Builder reference = GaugeSnapshot.builder().name("a_gauge").help("Help with \\ and\nnewline, ü");
    TextExposition out = new TextExposition();
    out.begin(family);
    // Enough points for several chunks, escapes and non-ASCII landing on chunk boundaries somewhere.
    for (int i = 0; i < 20_000; i++) {
      String card = String.format("card-%06d", i);
      String model = i % 7 == 0 ? "Ä \"quoted\" \\ model\n" + i : i % 11 == 0 ? "€ 🙂 lone \ud800 " + i : "model " + i;
      double value = i % 3 == 0 ? i * 1048576.0 : i / 3.0;
      out.gauge(family, value, card, model);
      reference.dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("card", card, "model", model)).value(value).build());
    }
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(written, MetricSnapshots.of(reference.build()));
    byte[] big = ("# a comment the registry wrote " + "x".repeat(600_000) + "\n").getBytes(StandardCharsets.UTF_8);
    out.append(big);

    String expected = written.toString(StandardCharsets.UTF_8) + new String(big, StandardCharsets.UTF_8);
    assertThat(expected.length()).isGreaterThan(3 * 256 * 1024);
    assertThat(new String(out.toByteArray(), StandardCharsets.UTF_8)).isEqualTo(expected);
  }

  @Test
  void writtenIntoAStreamItIsTheSameTextInWritesOfAChunkAtMostSaveALargerPiece() throws Exception {
    TextExposition.Family family = new TextExposition.Family("a_gauge", "Help", "card", "model");
    TextExposition kept = new TextExposition();
    ByteArrayOutputStream received = new ByteArrayOutputStream();
    int[] largest = {0};
    int[] writes = {0};
    OutputStream sink = new OutputStream() {
      @Override
      public void write(int b) {
        throw new AssertionError("written a byte at a time");
      }

      @Override
      public void write(byte[] b, int off, int len) {
        writes[0]++;
        largest[0] = Math.max(largest[0], len);
        received.write(b, off, len);
      }
    };
    TextExposition streamed = new TextExposition(sink);
    for (TextExposition out : new TextExposition[] {kept, streamed}) {
      out.begin(family);
      for (int i = 0; i < 20_000; i++) {
        out.gauge(family, i / 3.0, String.format("card-%06d", i), i % 7 == 0 ? "Ä \"quoted\" model\n" + i : "model " + i);
      }
      out.append(("# " + "x".repeat(300_000) + "\n").getBytes(StandardCharsets.UTF_8));
      out.gauge(family, 1, "last", "model");
    }
    assertThat(received.size()).as("nothing written before the end but whole chunks").isLessThan(kept.toByteArray().length);
    streamed.flush();
    assertThat(received.toByteArray()).isEqualTo(kept.toByteArray());
    assertThat(writes[0]).isGreaterThan(4);
    // One buffer of 256 KiB, reused: the registry's larger piece is copied through it too.
    assertThat(largest[0]).isLessThanOrEqualTo(256 * 1024);
    assertThatThrownBy(streamed::toByteArray).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aFamilyNamesItsLabelsSorted() {
    assertThatThrownBy(() -> new TextExposition.Family("g", "h", "node", "device"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("g's label names are not sorted: node,device");
  }

  @Test
  void aPointGivesOneValuePerLabel() {
    TextExposition.Family family = new TextExposition.Family("g", "h", "a", "b");
    TextExposition out = new TextExposition();
    out.begin(family);
    assertThatThrownBy(() -> out.gauge(family, 1, "only-one"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("g has 2 labels, given 1 values");
  }
}
