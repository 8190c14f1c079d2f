package io.vgpu.k8s.admission;

import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * The webhook's answer for one pod.
 *
 * @param allowed whether the pod may be created
 * @param message why it was denied, or a note when it was allowed unchanged; empty otherwise
 * @param pod the pod as admitted (mutated), empty when denied
 * @param patch the RFC 6902 operations from the submitted pod to the admitted one
 * @param requestsDevices whether any container asks for the vendor's devices
 * @param removed the scheduler-owned annotations and labels the pod was created with and lost
 *     ({@code annotation <key>} or {@code label <key>}), in the pod's order
 */
public record AdmissionResult(
    boolean allowed, String message, Optional<Pod> pod, ArrayNode patch, boolean requestsDevices, List<String> removed) {

  /** Validates the fields. */
  public AdmissionResult {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(pod, "pod");
    Objects.requireNonNull(patch, "patch");
    removed = List.copyOf(removed);
  }

  /** A denial with a one-line message. */
  public static AdmissionResult denied(String message) {
    return new AdmissionResult(false, message, Optional.empty(), JsonNodeFactory.instance.arrayNode(), false, List.of());
  }

  /** The admitted pod. */
  public Pod admittedPod() {
    return pod.orElseThrow(() -> new IllegalStateException("pod was denied: " + message));
  }
}
