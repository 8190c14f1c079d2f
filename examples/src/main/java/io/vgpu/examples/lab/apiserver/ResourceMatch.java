package io.vgpu.examples.lab.apiserver;

import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * A policy's {@code matchConstraints} or a binding's {@code matchResources}, matched as kube-apiserver
 * matches them: the namespace selector (cluster-scoped objects other than Namespaces always match), the
 * object selector (the new or the old object's labels), the excluded rules, then the rules (none: every
 * resource). A rule's {@code resources} entry {@code pods} is the object only, {@code pods/status} one
 * subresource, {@code pods/*} every subresource, {@code *} every object and {@code *}{@code /*}
 * everything.
 */
final class ResourceMatch {
  private final JsonNode namespaceSelector;
  private final JsonNode objectSelector;
  private final List<JsonNode> rules;
  private final List<JsonNode> excluded;

  private ResourceMatch(JsonNode spec) {
    this.namespaceSelector = spec.path("namespaceSelector");
    this.objectSelector = spec.path("objectSelector");
    this.rules = list(spec.path("resourceRules"));
    this.excluded = list(spec.path("excludeResourceRules"));
  }

  /** The match of a {@code matchConstraints} or {@code matchResources} (missing: matches everything). */
  static ResourceMatch of(JsonNode spec) {
    return new ResourceMatch(spec);
  }

  private static List<JsonNode> list(JsonNode array) {
    List<JsonNode> out = new ArrayList<>();
    array.forEach(out::add);
    return out;
  }

  /** Whether the write is one this matches. */
  boolean matches(AdmissionAttributes a) {
    if (!namespaceMatches(a) || !objectMatches(a)) {
      return false;
    }
    for (JsonNode rule : excluded) {
      if (ruleMatches(rule, a)) {
        return false;
      }
    }
    if (rules.isEmpty()) {
      return true;
    }
    for (JsonNode rule : rules) {
      if (ruleMatches(rule, a)) {
        return true;
      }
    }
    return false;
  }

  private boolean namespaceMatches(AdmissionAttributes a) {
    if (isEmpty(namespaceSelector)) {
      return true;
    }
    ApiPath path = a.path();
    boolean namespaceObject = path.group().isEmpty() && path.resource().equals("namespaces");
    if (path.namespace().isEmpty() && !namespaceObject) {
      return true; // a cluster-scoped object is never left out by a namespace selector
    }
    @Nullable JsonNode namespace = namespaceObject ? (a.object() != null ? a.object() : a.oldObject()) : a.namespaces().apply(path.namespace());
    return LabelSelectors.matches(namespaceSelector, AdmissionAttributes.labels(namespace));
  }

  private boolean objectMatches(AdmissionAttributes a) {
    if (isEmpty(objectSelector)) {
      return true;
    }
    return a.object() != null && LabelSelectors.matches(objectSelector, AdmissionAttributes.labels(a.object()))
        || a.oldObject() != null && LabelSelectors.matches(objectSelector, AdmissionAttributes.labels(a.oldObject()));
  }

  private static boolean isEmpty(JsonNode selector) {
    return selector.isMissingNode() || selector.isNull() || selector.isObject() && selector.path("matchLabels").isEmpty() && selector.path("matchExpressions").isEmpty();
  }

  private static boolean ruleMatches(JsonNode rule, AdmissionAttributes a) {
    ApiPath path = a.path();
    if (!listed(rule.path("operations"), a.operation()) || !listed(rule.path("apiGroups"), path.group()) || !listed(rule.path("apiVersions"), path.version())) {
      return false;
    }
    String scope = rule.path("scope").asString("*");
    boolean namespaced = !path.namespace().isEmpty();
    if (scope.equals("Namespaced") && !namespaced || scope.equals("Cluster") && namespaced) {
      return false;
    }
    JsonNode names = rule.path("resourceNames");
    if (!names.isEmpty() && !listed(names, a.name())) {
      return false;
    }
    for (JsonNode entry : rule.path("resources")) {
      String text = entry.asString("");
      int slash = text.indexOf('/');
      String resource = slash < 0 ? text : text.substring(0, slash);
      String subresource = slash < 0 ? "" : text.substring(slash + 1);
      if ((resource.equals("*") || resource.equals(path.resource())) && (subresource.equals("*") || subresource.equals(path.subresource()))) {
        return true;
      }
    }
    return false;
  }

  private static boolean listed(JsonNode list, String value) {
    for (JsonNode item : list) {
      String text = item.asString("");
      if (text.equals("*") || text.equals(value)) {
        return true;
      }
    }
    return false;
  }
}
