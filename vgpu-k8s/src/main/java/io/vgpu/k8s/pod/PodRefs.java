package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.PodRef;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A pod's identity and annotations, with Kubernetes' defaults for what a manifest leaves out. */
public final class PodRefs {
  /** The namespace of a pod whose manifest names none. */
  public static final String DEFAULT_NAMESPACE = "default";

  private PodRefs() {}

  /**
   * The pod's namespace and name.
   *
   * @throws PodRequestException when the pod has no name
   */
  public static PodRef of(Pod pod) {
    ObjectMeta meta = pod.getMetadata();
    String name = meta == null ? null : meta.getName();
    if (name == null || name.isEmpty()) {
      throw new PodRequestException("pod has no metadata.name");
    }
    String namespace = meta.getNamespace();
    return new PodRef(namespace == null || namespace.isEmpty() ? DEFAULT_NAMESPACE : namespace, name);
  }

  /**
   * Parses {@code name} (in the default namespace) or {@code namespace/name}.
   *
   * @throws IllegalArgumentException when a part is empty or there are more than two
   */
  public static PodRef parse(String text) {
    String[] parts = text.split("/", -1);
    for (String part : parts) {
      if (part.isEmpty() || parts.length > 2) {
        throw new IllegalArgumentException("'" + text + "' is not a pod name or namespace/name");
      }
    }
    return PodRef.parse(text, DEFAULT_NAMESPACE);
  }

  /**
   * The pod's init containers, then its app containers: the order of the segments of HAMi's device
   * annotations.
   */
  public static List<Container> containers(Pod pod) {
    List<Container> all = new ArrayList<>();
    if (pod.getSpec() != null) {
      if (pod.getSpec().getInitContainers() != null) {
        all.addAll(pod.getSpec().getInitContainers());
      }
      if (pod.getSpec().getContainers() != null) {
        all.addAll(pod.getSpec().getContainers());
      }
    }
    return all;
  }

  /** The pod's annotations, empty when it has none. */
  public static Map<String, String> annotations(Pod pod) {
    ObjectMeta meta = pod.getMetadata();
    return meta == null || meta.getAnnotations() == null ? Map.of() : meta.getAnnotations();
  }
}
