package io.vgpu.examples;

import static io.vgpu.examples.ScenarioRunner.pod;
import static io.vgpu.examples.ScenarioRunner.simulate;
import static io.vgpu.examples.ScenarioRunner.uuids;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code scenarios/placement-policies/fragmentation-aware.yaml} through {@code vgpu simulate}: the configuration selects
 * {@code fgd}, one pod selects {@code vgpu} by annotation, and both fill the card a whole-card pod could
 * not use where HAMi's spread would pick the emptier worker.
 */
class FragmentationScenarioTest {
  private static final String W1_CARD0 = "GPU-11111111-1111-1111-1111-111111110000";
  private static final String W1_CARD1 = "GPU-11111111-1111-1111-1111-111111110001";

  @Test
  void fgdByConfigurationAndVgpuByAnnotationCloseTheHoles() {
    JsonNode r = simulate("placement-policies/fragmentation-aware.yaml");

    JsonNode byConfig = pod(r, "frag/half-2");
    assertThat(byConfig.get("phase").stringValue()).isEqualTo("Running");
    assertThat(byConfig.get("node").stringValue()).isEqualTo("worker-1");
    assertThat(uuids(byConfig)).containsExactly(W1_CARD0);

    JsonNode byAnnotation = pod(r, "frag/half-3");
    assertThat(byAnnotation.get("phase").stringValue()).isEqualTo("Running");
    assertThat(byAnnotation.get("node").stringValue()).isEqualTo("worker-1");
    assertThat(uuids(byAnnotation)).containsExactly(W1_CARD1);
  }
}
