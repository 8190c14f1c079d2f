package io.vgpu.k8s.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.pod.PodJson;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** KAI's GPU_PORTION and RUNAI_NUM_OF_GPUS on a fraction container vgpu schedules, from its grant. */
class KaiPortionEnvTest {
  private static final String CARD = "GPU-00000000-0000-0000-0000-000000000000";
  private static final Map<String, Integer> A100 = Map.of(CARD, 40960);

  private static Pod pod(String labels, String annotations) {
    return PodJson.fromTree(PodJson.mapper().readTree(("{'metadata':{'name':'p','labels':" + labels + ",'annotations':" + annotations + "},"
        + "'spec':{'containers':[{'name':'side'},{'name':'app','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}").replace('\'', '"')));
  }

  private static List<DeviceGrant> grant(int mib) {
    return List.of(new DeviceGrant(CARD, "NVIDIA", mib, 0));
  }

  @Test
  void theFractionContainerGetsThePortionOfItsGrantAsKaisBindRequestWritesIt() {
    Pod memory = pod("{'kai.scheduler/queue':'q'}", "{'gpu-memory':'20480','gpu-fraction-container-name':'app'}");
    assertThat(KaiPortionEnv.of(memory, "app", grant(20889), A100)).containsExactly(Map.entry("GPU_PORTION", "0.51"), Map.entry("RUNAI_NUM_OF_GPUS", "0.51"));
    Pod half = pod("{'kai.scheduler/queue':'q'}", "{'gpu-fraction':'0.5','gpu-fraction-container-name':'app'}");
    assertThat(KaiPortionEnv.of(half, "app", grant(20480), A100)).containsEntry("GPU_PORTION", "0.50");
    Pod third = pod("{'kai.scheduler/queue':'q'}", "{'gpu-fraction':'0.33','gpu-fraction-container-name':'app'}");
    // int(40960 x 0.33) = 13516 MiB, which is 0.33 of the card again, rounded up
    assertThat(KaiPortionEnv.of(third, "app", grant(13516), A100)).containsEntry("GPU_PORTION", "0.33");
  }

  @Test
  void anyOtherContainerOrPodGetsNothing() {
    Pod memory = pod("{'kai.scheduler/queue':'q'}", "{'gpu-memory':'20480','gpu-fraction-container-name':'app'}");
    assertThat(KaiPortionEnv.of(memory, "side", grant(20889), A100)).isEmpty();
    assertThat(KaiPortionEnv.of(memory, "app", grant(20889), Map.of())).as("a card the node does not register").isEmpty();
    assertThat(KaiPortionEnv.of(pod("{}", "{'gpu-memory':'20480','gpu-fraction-container-name':'app'}"), "app", grant(20889), A100)).as("not the dialect").isEmpty();
    assertThat(KaiPortionEnv.of(pod("{'kai.scheduler/queue':'q'}", "{}"), "app", grant(40960), A100)).as("a whole card").isEmpty();
  }
}
