package io.vgpu.api;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where a pod was placed: its node and, per container (init containers first), the devices it was
 * granted.
 *
 * @param pod the pod
 * @param node the node
 * @param initContainers grants of the init containers, in order
 * @param containers grants of the app containers, in order
 */
public record PodGrant(
    PodRef pod, String node, List<ContainerGrant> initContainers, List<ContainerGrant> containers) {

  /** Copies the lists and validates the fields. */
  public PodGrant {
    Objects.requireNonNull(pod, "pod");
    Objects.requireNonNull(node, "node");
    initContainers = List.copyOf(initContainers);
    containers = List.copyOf(containers);
  }

  /** All container grants in annotation order: init containers first, then app containers. */
  public List<ContainerGrant> allContainers() {
    List<ContainerGrant> all = new ArrayList<>(initContainers.size() + containers.size());
    all.addAll(initContainers);
    all.addAll(containers);
    return all;
  }
}
