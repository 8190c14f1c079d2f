package io.vgpu.k8s.simulate;

import io.vgpu.api.Device;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.yaml.Position;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A node of a scenario: its name, labels, annotations and physical GPUs.
 *
 * @param name the node's name
 * @param labels the labels, {@code kubernetes.io/hostname} included
 * @param annotations the annotations (e.g. {@code hami.io/device-cordon})
 * @param devices the GPUs in index order; empty for a node without GPUs
 * @param position where the node is defined
 */
public record NodeSpec(
    String name, Map<String, String> labels, Map<String, String> annotations, List<Device> devices, Position position) {

  /** Copies the collections and adds the hostname label when missing. */
  public NodeSpec {
    Objects.requireNonNull(name, "name");
    Map<String, String> withHostname = new LinkedHashMap<>(labels);
    withHostname.putIfAbsent(NodeSelection.HOSTNAME_LABEL, name);
    labels = Collections.unmodifiableMap(withHostname);
    annotations = Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
    devices = List.copyOf(devices);
    Objects.requireNonNull(position, "position");
  }

  /** UUIDs listed in the node's {@code hami.io/device-cordon} annotation. */
  public Set<String> cordoned() {
    Set<String> out = new LinkedHashSet<>();
    String value = annotations.get(HamiAnnotations.DEVICE_CORDON);
    if (value != null) {
      for (String uuid : value.split(",")) {
        if (!uuid.trim().isEmpty()) {
          out.add(uuid.trim());
        }
      }
    }
    return out;
  }
}
