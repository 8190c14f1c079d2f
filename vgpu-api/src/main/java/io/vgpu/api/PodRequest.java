package io.vgpu.api;

import java.util.List;
import java.util.Objects;

/**
 * Everything the scheduler needs to know about a pod to place it: its containers' requests (init
 * containers first, as they run) and its constraints and policy choices.
 *
 * @param pod the pod
 * @param initContainers requests of the init containers, in order
 * @param containers requests of the app containers, in order
 * @param constraints which devices the pod may use
 * @param overrides the pod's own policy choices
 */
public record PodRequest(
    PodRef pod,
    List<ContainerRequest> initContainers,
    List<ContainerRequest> containers,
    DeviceConstraints constraints,
    PolicyOverrides overrides) {

  /** Copies the lists and validates the fields. */
  public PodRequest {
    Objects.requireNonNull(pod, "pod");
    initContainers = List.copyOf(initContainers);
    containers = List.copyOf(containers);
    Objects.requireNonNull(constraints, "constraints");
    Objects.requireNonNull(overrides, "overrides");
  }

  /** A pod with app containers only, no constraints and no overrides. */
  public static PodRequest of(PodRef pod, List<ContainerRequest> containers) {
    return new PodRequest(pod, List.of(), containers, DeviceConstraints.NONE, PolicyOverrides.NONE);
  }

  /** Whether any container asks for a device. */
  public boolean wantsDevices() {
    for (ContainerRequest c : initContainers) {
      if (c.wantsDevices()) {
        return true;
      }
    }
    for (ContainerRequest c : containers) {
      if (c.wantsDevices()) {
        return true;
      }
    }
    return false;
  }

  /** Returns a copy with other constraints. */
  public PodRequest withConstraints(DeviceConstraints value) {
    return new PodRequest(pod, initContainers, containers, value, overrides);
  }

  /** Returns a copy with other overrides. */
  public PodRequest withOverrides(PolicyOverrides value) {
    return new PodRequest(pod, initContainers, containers, constraints, value);
  }

  /** Returns a copy with init containers. */
  public PodRequest withInitContainers(List<ContainerRequest> value) {
    return new PodRequest(pod, value, containers, constraints, overrides);
  }
}
