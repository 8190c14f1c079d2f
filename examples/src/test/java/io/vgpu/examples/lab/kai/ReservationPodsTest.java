package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.pod.PodJson;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReservationPodsTest {
  @Test
  void theNameIsTheFirstEightBytesOfTheNodeAndGroupsSha256() {
    // printf 'worker1/g-1' | sha256sum → 92fab0bce0b8fb94 5fd6...
    assertThat(ReservationPods.name("worker1", "g-1")).isEqualTo("gpu-reservation-92fab0bce0b8fb94");
    assertThat(ReservationPods.name("worker1", "g-1")).isNotEqualTo(ReservationPods.name("worker1", "g-2"));
  }

  @Test
  void thePodIsKaisReservationObject() {
    var shared = PodJson.mapper().readTree("{\"spec\":{\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}}");
    String json = PodJson.mapper().writeValueAsString(ReservationPods.pod("worker1", "g-1", shared, "vgpu-lab/probe", List.of("reserve"), "nvidia"));
    assertThat(json).isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" + ReservationPods.name("worker1", "g-1")
        + "\",\"namespace\":\"kai-resource-reservation\",\"labels\":{\"app\":\"kai-resource-reservation\",\"runai-gpu-group\":\"g-1\"},"
        + "\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}},\"spec\":{\"nodeName\":\"worker1\",\"serviceAccountName\":\"kai-resource-reservation\","
        + "\"runtimeClassName\":\"nvidia\",\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"resource-reservation\","
        + "\"image\":\"vgpu-lab/probe\",\"args\":[\"reserve\"],\"env\":[{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
        + "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}}],"
        + "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"},\"requests\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
  }
}
