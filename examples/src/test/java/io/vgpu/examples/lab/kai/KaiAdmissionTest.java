package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.pod.PodJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;

class KaiAdmissionTest {
  private final KaiAdmission admission = new KaiAdmission(() -> "abcdefg");

  private static JsonNode pod(String annotations, String containers) {
    return PodJson.mapper().readTree("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"half\",\"namespace\":\"default\",\"annotations\":{" + annotations
        + "}},\"spec\":{\"schedulerName\":\"kai-scheduler\",\"containers\":[" + containers + "]}}");
  }

  @Test
  void aMemoryPodGetsGpusharingHamicoreAndTheRuntimeClass() {
    JsonNode out = admission.admit(pod("\"gpu-memory\":\"20480\"", "{\"name\":\"app\",\"env\":[{\"name\":\"CUDA_DEVICE_MEMORY_LIMIT\",\"value\":\"99999m\"}]}")).pod();
    assertThat(PodJson.mapper().writeValueAsString(out)).isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"half\",\"namespace\":\"default\","
        + "\"annotations\":{\"gpu-memory\":\"20480\",\"runai/shared-gpu-configmap\":\"half-abcdefg-shared-gpu\"}},\"spec\":{\"schedulerName\":\"kai-scheduler\","
        + "\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"CUDA_DEVICE_MEMORY_LIMIT\",\"value\":\"99999m\"},"
        + "{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"half-abcdefg-shared-gpu-0\",\"key\":\"NVIDIA_VISIBLE_DEVICES\"}}},"
        + "{\"name\":\"RUNAI_NUM_OF_GPUS\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"half-abcdefg-shared-gpu-0\",\"key\":\"RUNAI_NUM_OF_GPUS\"}}},"
        + "{\"name\":\"GPU_PORTION\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"half-abcdefg-shared-gpu-0\",\"key\":\"GPU_PORTION\"}}}],"
        + "\"envFrom\":[{\"configMapRef\":{\"name\":\"half-abcdefg-shared-gpu-0-evar\",\"optional\":false}}]}],"
        + "\"volumes\":[{\"name\":\"half-abcdefg-shared-gpu-0-vol\",\"configMap\":{\"name\":\"half-abcdefg-shared-gpu-0\"}}],\"runtimeClassName\":\"nvidia\"}}");
  }

  @Test
  void theFractionContainerIsTheNamedOneInitContainersFirst() {
    JsonNode pod = PodJson.mapper().readTree("{\"metadata\":{\"name\":\"p\",\"annotations\":{\"gpu-fraction\":\"0.5\",\"gpu-fraction-container-name\":\"b\"}},"
        + "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"initContainers\":[{\"name\":\"b\"}],\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]}}");
    JsonNode out = admission.admit(pod).pod();
    assertThat(out.at("/spec/initContainers/0/env/0/valueFrom/configMapKeyRef/name").asString()).isEqualTo("p-abcdefg-shared-gpu-i0");
    assertThat(out.at("/spec/containers/0/env").isMissingNode()).isTrue();
    assertThat(out.at("/spec/containers/1/env").isMissingNode()).isTrue();
  }

  @Test
  void wholeCardAndOtherSchedulersPodsAreNotTouched() {
    JsonNode whole = PodJson.mapper().readTree("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"schedulerName\":\"kai-scheduler\",\"containers\":[{\"name\":\"a\","
        + "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
    assertThat(admission.admit(whole).pod()).isEqualTo(whole);
    JsonNode other = pod("\"gpu-memory\":\"20480\"", "{\"name\":\"a\"}");
    ((tools.jackson.databind.node.ObjectNode) other.path("spec")).put("schedulerName", "default-scheduler");
    assertThat(admission.admit(other).pod()).isEqualTo(other);
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
    "\"gpu-memory\":\"8000Mi\"|gpu-memory annotation value must be a positive integer greater than 0",
    "\"gpu-memory\":\"0\"|gpu-memory annotation value must be a positive integer greater than 0",
    "\"gpu-fraction\":\"1.2\"|gpu-fraction annotation value must be a positive number smaller than 1.0",
    "\"gpu-fraction\":\"-1\"|gpu-fraction annotation value must be a positive number smaller than 1.0",
    "\"gpu-fraction\":\"0.5\",\"gpu-memory\":\"1\"|cannot request both GPU and GPU memory",
    "\"gpu-fraction-num-devices\":\"2\"|cannot request multiple fractional devices without specifying fraction portion or gpu-memory",
    "\"gpu-fraction-num-devices\":\"1.2\",\"gpu-fraction\":\"0.2\"|fraction count annotation value must be a positive integer greater than 0",
    "\"mps\":\"true\"|MPS is only supported with GPU fraction request",
  })
  void malformedRequestsAreDeniedWithKaisMessage(String annotations, String message) {
    assertThat(admission.admit(pod(annotations, "{\"name\":\"a\"}")).denial()).contains(message);
  }

  @Test
  void aFractionBesideWholeCardsIsDenied() {
    String limit = "{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}";
    assertThat(admission.admit(pod("\"gpu-fraction\":\"0.5\"", limit)).denial()).contains("cannot have both GPU fraction request and whole GPU resource request/limit");
    assertThat(admission.admit(pod("\"gpu-memory\":\"100\"", "{\"name\":\"a\"}," + limit)).denial()).contains("cannot request both GPU and GPU memory");
    assertThat(admission.admit(pod("", "{\"name\":\"a\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}")).denial())
        .contains("GPU is not not listed in resource limits");
  }
}
