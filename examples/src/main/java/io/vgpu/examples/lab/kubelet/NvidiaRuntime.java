package io.vgpu.examples.lab.kubelet;

import io.vgpu.api.Device;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What NVIDIA's container runtime, the node's default runtime as the chart's prerequisites require, makes
 * of a container: it reads {@code NVIDIA_VISIBLE_DEVICES} from the container's environment, whatever the
 * container requested, and exposes those GPUs with the driver's libraries. {@code all} is every GPU of
 * the node, a comma list names GPUs by index or UUID, {@code none} gives the driver's libraries and no
 * GPU, and {@code void}, an empty value or no such variable leave the container alone.
 *
 * <p>Which value counts when both the device plugin's Allocate and the pod spec set the variable: kubelet
 * hands the runtime the device plugin's variables first and the container's own after them (its
 * GetResources, then makeEnvironmentVariables); containerd keeps both entries in the process's
 * environment, and NVIDIA's runtime reads that list into a map, so the later one — the pod spec's —
 * decides which GPUs are exposed. A process's own {@code getenv} finds the first entry, so inside the
 * container the device plugin's value wins: the lab's container environment keeps that one.
 */
public final class NvidiaRuntime {
  /** The variable NVIDIA's runtime reads. */
  public static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";

  private NvidiaRuntime() {}

  /**
   * The environment a container's processes see: the container's own, then the device plugin's over it
   * (the first entry of a name is what {@code getenv} returns).
   *
   * @param own the container's environment as kubelet resolves it from the pod spec
   * @param allocated what the device plugin's Allocate returned for the container
   */
  public static Map<String, String> processEnvironment(Map<String, String> own, Map<String, String> allocated) {
    Map<String, String> env = new LinkedHashMap<>(own);
    env.putAll(allocated);
    return env;
  }

  /**
   * The GPUs the runtime exposes to a container on a node, as {@code VGPU_MOCK_VISIBLE_DEVICES} takes
   * them ({@code all}, {@code none} or a comma list of indices and UUIDs); empty when the runtime leaves
   * the container alone (no GPU, and no driver libraries either).
   *
   * @param own the container's environment as kubelet resolves it from the pod spec
   * @param allocated what the device plugin's Allocate returned for the container
   * @param devices the node's GPUs
   * @throws IOException when the value names a GPU the node does not have, as the runtime refuses to
   *     create such a container
   */
  public static Optional<String> exposed(Map<String, String> own, Map<String, String> allocated, List<Device> devices) throws IOException {
    String value = own.containsKey(VISIBLE_DEVICES) ? own.get(VISIBLE_DEVICES) : allocated.get(VISIBLE_DEVICES);
    if (value == null || value.isEmpty() || value.equals("void") || devices.isEmpty()) {
      return Optional.empty();
    }
    if (value.equals("all") || value.equals("none")) {
      return Optional.of(value);
    }
    List<String> known = new ArrayList<>();
    for (Device d : devices) {
      known.add(Integer.toString(d.index()));
      known.add(d.uuid());
    }
    for (String entry : value.split(",")) {
      if (!known.contains(entry.trim())) {
        throw new IOException("nvidia-container-cli: device error: " + entry.trim() + ": unknown device (" + VISIBLE_DEVICES + "=" + value + ")");
      }
    }
    return Optional.of(value);
  }
}
