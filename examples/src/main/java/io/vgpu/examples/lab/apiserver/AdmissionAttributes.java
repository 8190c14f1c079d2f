package io.vgpu.examples.lab.apiserver;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * One write as admission sees it: what is done ({@code CREATE}, {@code UPDATE}, {@code DELETE}) to which
 * resource and subresource, by whom, the object after the write and the object before it.
 *
 * @param operation {@code CREATE}, {@code UPDATE} or {@code DELETE} (a patch is an UPDATE)
 * @param path the resource, its namespace, name and subresource
 * @param kind the written object's kind ({@code Pod}, or {@code Binding} for a binding)
 * @param kindVersion the written object's {@code apiVersion}
 * @param user who writes
 * @param object the object after the write; null for a delete
 * @param oldObject the object before the write; null for a create
 * @param namespaces the stored Namespace objects by name (null when there is none), for namespace selectors and {@code namespaceObject}
 */
record AdmissionAttributes(
    String operation,
    ApiPath path,
    String kind,
    String kindVersion,
    UserInfo user,
    @Nullable JsonNode object,
    @Nullable JsonNode oldObject,
    Function<String, @Nullable JsonNode> namespaces) {
  /** Operations as the API names them. */
  static final String CREATE = "CREATE";
  static final String UPDATE = "UPDATE";
  static final String DELETE = "DELETE";

  /** The object's name: from the path, or from the object for a create. */
  String name() {
    if (!path.name().isEmpty()) {
      return path.name();
    }
    return object == null ? "" : object.path("metadata").path("name").asString("");
  }

  /** The labels of the object, or of the old object when there is no new one. */
  static Map<String, String> labels(@Nullable JsonNode object) {
    Map<String, String> out = new LinkedHashMap<>();
    if (object != null) {
      object.path("metadata").path("labels").properties().forEach(e -> out.put(e.getKey(), e.getValue().asString("")));
    }
    return out;
  }

  /**
   * {@code request} as kube-apiserver hands it to CEL: an {@code admission/v1.AdmissionRequest} made
   * unstructured, so a field that is empty ({@code subResource} of a write to the object itself, {@code
   * namespace} of a cluster-scoped one, a user's {@code extra}) is absent: a policy tests it with {@code has()}.
   */
  Map<String, Object> request() {
    Map<String, Object> out = new LinkedHashMap<>();
    String group = kindVersion.contains("/") ? kindVersion.substring(0, kindVersion.indexOf('/')) : "";
    String version = kindVersion.substring(kindVersion.indexOf('/') + 1);
    Map<String, Object> gvk = Map.of("group", group, "version", version, "kind", kind);
    Map<String, Object> gvr = Map.of("group", path.group(), "version", path.version(), "resource", path.resource());
    out.put("kind", gvk);
    out.put("resource", gvr);
    out.put("requestKind", gvk);
    out.put("requestResource", gvr);
    if (!path.subresource().isEmpty()) {
      out.put("subResource", path.subresource());
      out.put("requestSubResource", path.subresource());
    }
    if (!name().isEmpty()) {
      out.put("name", name());
    }
    if (!path.namespace().isEmpty()) {
      out.put("namespace", path.namespace());
    }
    out.put("operation", operation);
    out.put("userInfo", user.toCel());
    out.put("dryRun", false);
    String options = switch (operation) {
      case CREATE -> "CreateOptions";
      case DELETE -> "DeleteOptions";
      default -> "UpdateOptions";
    };
    out.put("options", Map.of("apiVersion", "meta.k8s.io/v1", "kind", options));
    return out;
  }
}
