package io.vgpu.k8s.pod;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.TestPods;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NodeSelectionTest {
  private static final Map<String, String> WORKER1 = Map.of("kubernetes.io/hostname", "worker1", "gpu", "on", "rack", "3");
  private static final Map<String, String> WORKER2 = Map.of("kubernetes.io/hostname", "worker2");

  private static Pod pod(String spec) {
    return TestPods.yaml("metadata: {name: p}\nspec:\n  containers: [{name: c}]\n" + spec);
  }

  @Test
  void withoutRulesEveryNodeIsAllowed() {
    assertThat(NodeSelection.allows(pod(""), "worker1", WORKER1)).isTrue();
  }

  @Test
  void nodeSelectorNeedsEveryLabel() {
    Pod p = pod("  nodeSelector: {kubernetes.io/hostname: worker1, gpu: \"on\"}\n");
    assertThat(NodeSelection.allows(p, "worker1", WORKER1)).isTrue();
    assertThat(NodeSelection.allows(p, "worker2", WORKER2)).isFalse();
  }

  @Test
  void requiredAffinityOrsTermsAndAndsExpressions() {
    Pod p =
        pod(
            """
              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                    - matchExpressions:
                      - {key: gpu, operator: In, values: ["on"]}
                      - {key: rack, operator: Gt, values: ["2"]}
                    - matchFields:
                      - {key: metadata.name, operator: In, values: [worker2]}
            """);
    assertThat(NodeSelection.allows(p, "worker1", WORKER1)).isTrue();
    assertThat(NodeSelection.allows(p, "worker2", WORKER2)).isTrue();
    assertThat(NodeSelection.allows(p, "worker3", Map.of("gpu", "on", "rack", "1"))).isFalse();
  }

  @Test
  void supportsEveryOperator() {
    assertThat(allows("{key: gpu, operator: NotIn, values: [\"off\"]}", WORKER1)).isTrue();
    assertThat(allows("{key: gpu, operator: NotIn, values: [\"on\"]}", WORKER1)).isFalse();
    assertThat(allows("{key: gpu, operator: Exists}", WORKER1)).isTrue();
    assertThat(allows("{key: gpu, operator: DoesNotExist}", WORKER1)).isFalse();
    assertThat(allows("{key: gpu, operator: DoesNotExist}", WORKER2)).isTrue();
    assertThat(allows("{key: rack, operator: Lt, values: [\"4\"]}", WORKER1)).isTrue();
    assertThat(allows("{key: rack, operator: Lt, values: [\"3\"]}", WORKER1)).isFalse();
    assertThat(allows("{key: rack, operator: Lt, values: [\"x\"]}", WORKER1)).isFalse();
    assertThat(allows("{key: gpu, operator: Sometimes}", WORKER1)).isFalse();
  }

  @Test
  void anEmptyTermMatchesNothing() {
    Pod p = pod("  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{}]}}}\n");
    assertThat(NodeSelection.allows(p, "worker1", WORKER1)).isFalse();
  }

  private static boolean allows(String expression, Map<String, String> labels) {
    Pod p =
        pod(
            "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: ["
                + expression
                + "]}]}}}\n");
    return NodeSelection.allows(p, "n", labels);
  }
}
