package io.vgpu.examples.lab.apiserver;

import java.util.Map;
import tools.jackson.databind.JsonNode;

/** Kubernetes label selectors ({@code matchLabels}, {@code matchExpressions}) evaluated on a label map. */
public final class LabelSelectors {
  private LabelSelectors() {}

  /** Whether the labels match the selector; a missing or empty selector matches everything. */
  public static boolean matches(JsonNode selector, Map<String, String> labels) {
    if (selector == null || selector.isMissingNode() || selector.isNull()) {
      return true;
    }
    for (var e : selector.path("matchLabels").properties()) {
      if (!e.getValue().asString("").equals(labels.get(e.getKey()))) {
        return false;
      }
    }
    for (JsonNode expression : selector.path("matchExpressions")) {
      String key = expression.path("key").asString("");
      String operator = expression.path("operator").asString("");
      boolean present = labels.containsKey(key);
      boolean inValues = false;
      for (JsonNode v : expression.path("values")) {
        inValues |= present && v.asString("").equals(labels.get(key));
      }
      boolean ok =
          switch (operator) {
            case "In" -> inValues;
            case "NotIn" -> !inValues;
            case "Exists" -> present;
            case "DoesNotExist" -> !present;
            default -> false;
          };
      if (!ok) {
        return false;
      }
    }
    return true;
  }
}
