package io.vgpu.k8s.simulate;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The labels a node needs for vgpu's node agent to run on it. The chart runs the node agent as a
 * DaemonSet whose {@code nodeSelector} is the value {@code devicePlugin.nvidiaNodeSelector}, {@code gpu:
 * "on"} by default: a node with GPUs that lacks those labels runs no node agent, so its GPUs never
 * register and nothing is placed on them, while {@code vgpu simulate}, which places pods on every node's
 * GPUs, would place them there. A scenario has no place for the chart's values, so simulate judges
 * against the default ({@code vgpu lab} reads the same selector from the chart's default render).
 */
public final class NodeAgentSelector {
  /** {@code devicePlugin.nvidiaNodeSelector} as the chart sets it by default. */
  public static final Map<String, String> CHART_DEFAULT = Map.of("gpu", "on");

  private NodeAgentSelector() {}

  /** The labels of {@code selector} that {@code labels} lacks (or has with another value), as {@code k=v}. */
  public static List<String> missing(Map<String, String> selector, Map<String, String> labels) {
    List<String> out = new ArrayList<>();
    selector.entrySet().stream()
        .filter(e -> !e.getValue().equals(labels.get(e.getKey())))
        .map(e -> e.getKey() + "=" + e.getValue())
        .sorted()
        .forEach(out::add);
    return out;
  }

  /** One line per scenario node with GPUs that the chart's default node agent DaemonSet would not run on. */
  public static List<String> warnings(Scenario scenario) {
    List<String> out = new ArrayList<>();
    for (NodeSpec node : scenario.nodes()) {
      List<String> missing = missing(CHART_DEFAULT, node.labels());
      if (!node.devices().isEmpty() && !missing.isEmpty()) {
        out.add("node " + node.name() + " has GPUs but not the label " + String.join(", ", missing)
            + " that the chart's node agent DaemonSet selects (devicePlugin.nvidiaNodeSelector): in a cluster its GPUs never register,"
            + " while simulate places pods on them");
      }
    }
    return out;
  }
}
