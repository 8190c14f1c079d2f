package io.vgpu.k8s;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.yaml.JacksonTrees;
import io.vgpu.k8s.yaml.YamlReader;

/** Pods for tests, written as YAML manifests. */
public final class TestPods {
  private TestPods() {}

  /** Parses a YAML pod manifest. */
  public static Pod yaml(String manifest) {
    return PodJson.fromTree(JacksonTrees.toJson(YamlReader.read(manifest, "test.yaml")));
  }

  /** A pod named {@code p} with one container {@code gpu} with these limits (a YAML flow mapping body). */
  public static Pod withLimits(String limits) {
    return yaml("metadata: {name: p}\nspec:\n  containers:\n  - name: gpu\n    resources: {limits: {" + limits + "}}\n");
  }
}
