package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The container of a pod KAI shares that gets the fraction, by KAI's rule: the one the annotation {@link
 * KaiKeys#GPU_FRACTION_CONTAINER_NAME} names, init containers searched first, then app containers;
 * without the annotation the first app container.
 *
 * @param list {@code initContainers} or {@code containers}: the pod spec field that holds it
 * @param index its index in that list
 * @param name its name
 */
public record FractionContainer(String list, int index, String name) {
  /** Validates the fields. */
  public FractionContainer {
    Objects.requireNonNull(list, "list");
    Objects.requireNonNull(name, "name");
    if (!list.equals("initContainers") && !list.equals("containers")) {
      throw new IllegalArgumentException("list must be initContainers or containers, not " + list);
    }
  }

  /**
   * The fraction container of a pod.
   *
   * @throws IllegalArgumentException with one line naming the annotation and its value, when the
   *     annotation names no container of the pod, or the pod has no app container
   */
  public static FractionContainer of(Pod pod) {
    PodSpec spec = pod.getSpec();
    List<Container> containers = spec == null || spec.getContainers() == null ? List.of() : spec.getContainers();
    Map<String, String> annotations = pod.getMetadata() == null ? null : pod.getMetadata().getAnnotations();
    String wanted = annotations == null ? null : annotations.get(KaiKeys.GPU_FRACTION_CONTAINER_NAME);
    if (wanted == null) {
      if (containers.isEmpty()) {
        throw new IllegalArgumentException("pod has no containers");
      }
      return new FractionContainer("containers", 0, containers.get(0).getName());
    }
    List<Container> init = spec == null || spec.getInitContainers() == null ? List.of() : spec.getInitContainers();
    for (int i = 0; i < init.size(); i++) {
      if (wanted.equals(init.get(i).getName())) {
        return new FractionContainer("initContainers", i, wanted);
      }
    }
    for (int i = 0; i < containers.size(); i++) {
      if (wanted.equals(containers.get(i).getName())) {
        return new FractionContainer("containers", i, wanted);
      }
    }
    throw new IllegalArgumentException(
        "pod annotation " + KaiKeys.GPU_FRACTION_CONTAINER_NAME + ": '" + wanted + "' names no init container or container of the pod");
  }
}
