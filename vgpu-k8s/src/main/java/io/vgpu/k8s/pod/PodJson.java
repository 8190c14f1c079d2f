package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Pod;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Pods to and from JSON trees with fabric8's model (Jackson 3), and deep copies. */
public final class PodJson {
  private static final JsonMapper MAPPER = JsonMapper.builder().build();

  private PodJson() {}

  /** The mapper used for Kubernetes objects. */
  public static JsonMapper mapper() {
    return MAPPER;
  }

  /** The pod as a JSON tree. */
  public static JsonNode toTree(Pod pod) {
    return MAPPER.valueToTree(pod);
  }

  /**
   * A pod from a JSON tree.
   *
   * @throws tools.jackson.core.JacksonException when the tree is not a pod
   */
  public static Pod fromTree(JsonNode tree) {
    return MAPPER.treeToValue(tree, Pod.class);
  }

  /** A deep copy of the pod. */
  public static Pod copy(Pod pod) {
    return fromTree(toTree(pod));
  }
}
