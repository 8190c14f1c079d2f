package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The warm-up's made-up objects are pods and nodes as fabric8's model reads them, and the lean readers
 * read each stage of them as they read any pod: the same result as the full decode's lean copy.
 */
class WarmUpObjectsTest {
  private static final JsonMapper JSON = PodJson.mapper().rebuild().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
  private static final Set<String> RESOURCES = LeanStore.podResources(ResourceSchema.nvidia());
  private static final KubernetesSerialization FULL = new KubernetesSerialization();

  private final WarmUpObjects objects = new WarmUpObjects(JSON, ResourceSchema.nvidia());
  private final KubernetesSerialization lean = LeanDecoding.serialization(LeanReader.forCache(RESOURCES, (key, annotation, length) -> {}));

  @Test
  void eachStageOfEachKindOfPodIsReadLeanAsFromTheFullModel() {
    Map<String, String> decision = Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, "GPU-0,NVIDIA,1024,5:;");
    for (int variant = 0; variant < 4; variant++) {
      WarmUpObjects.PodTexts texts = objects.texts(variant, List.of("n1", "n2"));
      Map<String, String> values = WarmUpObjects.values(100 + variant, WarmUpObjects.NAMESPACE, "uid-" + variant, 1, 1024, 5);
      List<Pod> seen = new ArrayList<>();
      seen.add(readBoth(texts.event("ADDED", WarmUpObjects.Stage.PENDING, values)));
      objects.placed(values, "n1", decision);
      for (WarmUpObjects.Stage stage : List.of(WarmUpObjects.Stage.DECIDED, WarmUpObjects.Stage.BOUND, WarmUpObjects.Stage.RUNNING, WarmUpObjects.Stage.DELETING)) {
        seen.add(readBoth(texts.event("MODIFIED", stage, values)));
      }

      assertThat(seen.get(0).getMetadata().getName()).isEqualTo("warm-up-" + (100 + variant));
      assertThat(seen.get(0).getMetadata().getUid()).isEqualTo("uid-" + variant);
      assertThat(seen.get(0).getSpec().getNodeName()).isNull();
      assertThat(seen.get(0).getStatus().getPhase()).isEqualTo("Pending");
      assertThat(seen.get(1).getMetadata().getAnnotations()).containsEntry(HamiAnnotations.ASSIGNED_NODE, "n1").containsKey(HamiAnnotations.DEVICES_ALLOCATED);
      assertThat(seen.get(2).getSpec().getNodeName()).isEqualTo("n1");
      assertThat(seen.get(3).getStatus().getPhase()).isEqualTo("Running");
      assertThat(seen.get(4).getMetadata().getDeletionTimestamp()).isNotNull();
      // Each resource version is new, as an API server's would be.
      assertThat(seen.stream().map(p -> p.getMetadata().getResourceVersion()).distinct()).hasSize(5);
      if (variant == 2) {
        assertThat(seen.get(3).getStatus().getInitContainerStatuses()).singleElement()
            .satisfies(s -> assertThat(s.getState().getTerminated().getExitCode()).isZero());
      }
    }
  }

  @Test
  void theFilterRequestCarriesThePendingPodsRequestItsSelectorsAndTheNodeNames() {
    WarmUpObjects.PodTexts texts = objects.texts(3, List.of("n1", "n2"));
    ExtenderArgs args = new ExtenderArgsReader(JSON).read(texts.filterRequest(WarmUpObjects.values(7, WarmUpObjects.NAMESPACE, "uid-7", 2, 4096, 30)));

    assertThat(args.nodeNames()).containsExactly("n1", "n2");
    Pod read = args.pod();
    assertThat(read.getSpec().getContainers()).singleElement().satisfies(c -> {
      assertThat(c.getResources().getLimits()).containsKeys("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores");
      assertThat(c.getResources().getLimits().get("nvidia.com/gpu").toString()).isEqualTo("2");
      assertThat(c.getResources().getLimits().get("nvidia.com/gpumem").toString()).isEqualTo("4096");
      assertThat(c.getResources().getLimits().get("nvidia.com/gpucores").toString()).isEqualTo("30");
    });
    assertThat(read.getSpec().getNodeSelector()).containsEntry("gpu", "on");
    assertThat(read.getSpec().getAffinity().getNodeAffinity()).isNotNull();
  }

  @Test
  void aPlacementWithoutADecisionIsRefused() {
    Map<String, String> values = WarmUpObjects.values(1, WarmUpObjects.NAMESPACE, "uid", 1, 1024, 5);
    assertThatThrownBy(() -> objects.placed(values, "n1", Map.of())).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void nodesAreReadLeanAsFromTheFullModelAndEveryFifthIsCordoned() {
    for (int n = 0; n < 5; n++) {
      String event = objects.nodeEvent("node-" + n, "register", n, 8);
      Node full = (Node) FULL.unmarshal(event, WatchEvent.class).getObject();
      Node read = (Node) lean.unmarshal(event, WatchEvent.class).getObject();

      assertThat(read).isEqualTo(LeanStore.lean(full));
      assertThat(Boolean.TRUE.equals(read.getSpec() == null ? null : read.getSpec().getUnschedulable())).isEqualTo(n == 4);
      assertThat(read.getMetadata().getAnnotations()).containsEntry(HamiAnnotations.NODE_REGISTER, "register");
    }
  }

  /** The pod of {@code event} read lean, after checking it equals the full model's lean copy. */
  private Pod readBoth(String event) {
    Pod full = (Pod) FULL.unmarshal(event, WatchEvent.class).getObject();
    Pod read = (Pod) lean.unmarshal(event, WatchEvent.class).getObject();
    assertThat(read).as(event).isEqualTo(LeanStore.lean(full, RESOURCES, (annotation, length) -> {}));
    return read;
  }
}
