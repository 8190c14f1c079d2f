package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Affinity;
import io.fabric8.kubernetes.api.model.NodeAffinity;
import io.fabric8.kubernetes.api.model.NodeSelector;
import io.fabric8.kubernetes.api.model.NodeSelectorRequirement;
import io.fabric8.kubernetes.api.model.NodeSelectorTerm;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Whether a pod may run on a node by the rules kube-scheduler applies before any extender: {@code
 * spec.nodeSelector} and the required node affinity ({@code
 * requiredDuringSchedulingIgnoredDuringExecution}, whose terms are ORed and whose expressions are ANDed;
 * operators {@code In}, {@code NotIn}, {@code Exists}, {@code DoesNotExist}, {@code Gt}, {@code Lt}, and
 * the field {@code metadata.name}).
 */
public final class NodeSelection {
  /** The label every node carries with its own name. */
  public static final String HOSTNAME_LABEL = "kubernetes.io/hostname";

  private NodeSelection() {}

  /**
   * Whether the pod may run on the node.
   *
   * @param pod the pod
   * @param node the node's name
   * @param labels the node's labels
   */
  public static boolean allows(Pod pod, String node, Map<String, String> labels) {
    PodSpec spec = pod.getSpec();
    if (spec == null) {
      return true;
    }
    Map<String, String> selector = spec.getNodeSelector();
    if (selector != null) {
      for (Map.Entry<String, String> e : selector.entrySet()) {
        if (!e.getValue().equals(labels.get(e.getKey()))) {
          return false;
        }
      }
    }
    NodeSelector required = requiredAffinity(spec.getAffinity());
    if (required == null) {
      return true;
    }
    List<NodeSelectorTerm> terms = required.getNodeSelectorTerms();
    if (terms == null) {
      return false;
    }
    for (NodeSelectorTerm term : terms) {
      if (termMatches(term, node, labels)) {
        return true;
      }
    }
    return false;
  }

  private static NodeSelector requiredAffinity(Affinity affinity) {
    if (affinity == null) {
      return null;
    }
    NodeAffinity nodeAffinity = affinity.getNodeAffinity();
    return nodeAffinity == null ? null : nodeAffinity.getRequiredDuringSchedulingIgnoredDuringExecution();
  }

  /** A term with no requirements matches no node, as in Kubernetes. */
  private static boolean termMatches(NodeSelectorTerm term, String node, Map<String, String> labels) {
    List<NodeSelectorRequirement> expressions = term.getMatchExpressions() == null ? List.of() : term.getMatchExpressions();
    List<NodeSelectorRequirement> fields = term.getMatchFields() == null ? List.of() : term.getMatchFields();
    if (expressions.isEmpty() && fields.isEmpty()) {
      return false;
    }
    for (NodeSelectorRequirement r : expressions) {
      if (!requirementMatches(r, labels.get(r.getKey()))) {
        return false;
      }
    }
    for (NodeSelectorRequirement r : fields) {
      String value = "metadata.name".equals(r.getKey()) ? node : null;
      if (!requirementMatches(r, value)) {
        return false;
      }
    }
    return true;
  }

  private static boolean requirementMatches(NodeSelectorRequirement r, String value) {
    List<String> values = r.getValues() == null ? List.of() : r.getValues();
    String operator = r.getOperator() == null ? "" : r.getOperator();
    return switch (operator) {
      case "In" -> value != null && values.contains(value);
      case "NotIn" -> value == null || !values.contains(value);
      case "Exists" -> value != null;
      case "DoesNotExist" -> value == null;
      case "Gt" -> compare(value, values).map(c -> c > 0).orElse(false);
      case "Lt" -> compare(value, values).map(c -> c < 0).orElse(false);
      default -> false;
    };
  }

  /** Compares the label's integer value with the requirement's single value; empty when either is not an integer. */
  private static Optional<Integer> compare(String value, List<String> values) {
    if (value == null || values.size() != 1) {
      return Optional.empty();
    }
    try {
      return Optional.of(Long.compare(Long.parseLong(value), Long.parseLong(values.get(0))));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }
}
