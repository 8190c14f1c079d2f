package io.vgpu.examples.lab.kai;

import io.vgpu.k8s.kai.KaiKeys;
import java.util.Optional;
import tools.jackson.databind.JsonNode;

/**
 * The container of a fraction pod that gets the GPU, by KAI's rule ({@code GetFractionContainerRef}): the
 * one {@code gpu-fraction-container-name} names, init containers searched first; else the first
 * container.
 *
 * @param name its name
 * @param index its index in its list
 * @param init whether it is an init container
 */
public record FractionContainer(String name, int index, boolean init) {
  /** The fraction container of a pod (as JSON); empty when the annotation names no container of the pod. */
  public static Optional<FractionContainer> of(JsonNode pod) {
    String wanted = pod.path("metadata").path("annotations").path(KaiKeys.GPU_FRACTION_CONTAINER_NAME).asString("");
    JsonNode init = pod.path("spec").path("initContainers");
    JsonNode app = pod.path("spec").path("containers");
    if (wanted.isEmpty()) {
      return app.size() == 0 ? Optional.empty() : Optional.of(new FractionContainer(app.get(0).path("name").asString(""), 0, false));
    }
    for (int i = 0; i < init.size(); i++) {
      if (init.get(i).path("name").asString("").equals(wanted)) {
        return Optional.of(new FractionContainer(wanted, i, true));
      }
    }
    for (int i = 0; i < app.size(); i++) {
      if (app.get(i).path("name").asString("").equals(wanted)) {
        return Optional.of(new FractionContainer(wanted, i, false));
      }
    }
    return Optional.empty();
  }

  /** The JSON pointer of the container in the pod. */
  public String pointer() {
    return "/spec/" + (init ? "initContainers" : "containers") + "/" + index;
  }

  /** The capabilities ConfigMap's name, given the pod's {@code runai/shared-gpu-configmap} prefix. */
  public String capabilitiesConfigMap(String prefix) {
    return prefix + "-" + (init ? "i" : "") + index;
  }

  /** The direct-env ConfigMap's name. */
  public String directEnvConfigMap(String prefix) {
    return capabilitiesConfigMap(prefix) + "-evar";
  }
}
