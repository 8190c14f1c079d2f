package io.vgpu.examples.lab.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** LAB.md's flat form of a Prometheus scrape. */
class PrometheusTextTest {
  @Test
  void samplesAreKeyedByNameAndSortedEscapedLabels() {
    Map<String, PrometheusText.Value> samples =
        PrometheusText.parse(
            """
            # HELP hami_gpu_memory_allocated_bytes Allocated memory
            # TYPE hami_gpu_memory_allocated_bytes gauge
            hami_gpu_memory_allocated_bytes{node="w1",device_uuid="GPU-0"} 4.294967296E9
            up 1
            odd{b="x\\\\y",a="say \\"hi\\"\\nthere"} NaN
            inf{a="1"} +Inf 1700000000000
            """);
    assertThat(samples.keySet())
        .containsExactly(
            "hami_gpu_memory_allocated_bytes{device_uuid=\"GPU-0\",node=\"w1\"}", "up", "odd{a=\"say \\\"hi\\\"\\nthere\",b=\"x\\\\y\"}", "inf{a=\"1\"}");
    assertThat(samples.get("hami_gpu_memory_allocated_bytes{device_uuid=\"GPU-0\",node=\"w1\"}").number()).isEqualTo(4294967296.0);
    assertThat(samples.get("odd{a=\"say \\\"hi\\\"\\nthere\",b=\"x\\\\y\"}").text()).isEqualTo("NaN");
    assertThat(samples.get("inf{a=\"1\"}")).extracting(PrometheusText.Value::finite, PrometheusText.Value::text).containsExactly(false, "+Inf");
  }

  @Test
  void aLineThatIsNoSampleIsRefused() {
    assertThatThrownBy(() -> PrometheusText.parse("bad{a=1} 2\n")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed labels");
  }
}
