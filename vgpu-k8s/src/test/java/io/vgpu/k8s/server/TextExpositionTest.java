package io.vgpu.k8s.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
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
