package io.vgpu.examples.lab.apiserver;

import io.fabric8.zjsonpatch.JsonPatch;
import io.fabric8.zjsonpatch.JsonPatchException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The patch types of kube-apiserver that clients of the lab send, applied to an object as stored: JSON
 * Patch (RFC 6902), JSON merge patch (RFC 7386: a {@code null} removes the key, a list replaces the
 * list) and strategic merge patch (a merge patch whose lists of the Pod and Node fields the API merges by
 * key are merged element by element, with the {@code $patch} directive). Server-side apply, which
 * kube-apiserver also takes, is not here: the stand-in answers it 415, as any other type.
 */
final class ObjectPatch {
  /** The content types, as clients send them. */
  static final String JSON_PATCH = "application/json-patch+json";
  static final String MERGE_PATCH = "application/merge-patch+json";
  static final String STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json";

  /**
   * The lists of Pods and Nodes whose elements a strategic merge patch merges by a key (their Go types'
   * {@code patchMergeKey}), by path from the object's root ({@code []} steps into a list's elements).
   * Every other list is replaced whole, as a merge patch replaces it.
   */
  private static final Map<String, String> MERGE_KEYS =
      Map.ofEntries(
          Map.entry("metadata.ownerReferences", "uid"),
          Map.entry("spec.containers", "name"),
          Map.entry("spec.initContainers", "name"),
          Map.entry("spec.ephemeralContainers", "name"),
          Map.entry("spec.containers[].env", "name"),
          Map.entry("spec.initContainers[].env", "name"),
          Map.entry("spec.containers[].ports", "containerPort"),
          Map.entry("spec.initContainers[].ports", "containerPort"),
          Map.entry("spec.containers[].volumeMounts", "mountPath"),
          Map.entry("spec.initContainers[].volumeMounts", "mountPath"),
          Map.entry("spec.volumes", "name"),
          Map.entry("spec.imagePullSecrets", "name"),
          Map.entry("status.conditions", "type"),
          Map.entry("status.addresses", "type"),
          Map.entry("status.podIPs", "ip"));

  /** Lists of strings a strategic merge patch unites with the stored list. */
  private static final Set<String> MERGED_STRING_LISTS = Set.of("metadata.finalizers");

  private static final String DIRECTIVE = "$patch";
  private static final String ELEMENT_ORDER = "$setElementOrder/";

  /** A patch the stand-in cannot apply: answered with {@code code} and {@code message}. */
  static final class PatchException extends RuntimeException {
    private final int code;

    PatchException(int code, String message) {
      super(message);
      this.code = code;
    }

    /** The HTTP status to answer with. */
    int code() {
      return code;
    }
  }

  private ObjectPatch() {}

  /**
   * The object after the patch.
   *
   * @param current the stored object (not changed)
   * @param contentType the request's {@code Content-Type}
   * @param patch the request's body, parsed
   * @throws PatchException 415 for a type the API server would not take for this object, 422 for a patch that does not apply
   */
  static JsonNode apply(JsonNode current, @Nullable String contentType, JsonNode patch) {
    String type = contentType == null ? "" : contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    switch (type) {
      case JSON_PATCH -> {
        if (!patch.isArray()) {
          throw new PatchException(400, "a JSON patch must be a list of operations");
        }
        try {
          return JsonPatch.apply(patch, current);
        } catch (JsonPatchException | IllegalArgumentException e) {
          throw new PatchException(422, "the JSON patch does not apply: " + e.getMessage());
        }
      }
      case MERGE_PATCH -> {
        return merge(current.deepCopy(), patch);
      }
      case STRATEGIC_MERGE_PATCH -> {
        return strategicMerge(current.deepCopy(), patch, "");
      }
      default -> throw new PatchException(415, "the server does not take patches of type '" + type + "' (take " + JSON_PATCH + ", " + MERGE_PATCH + " or "
          + STRATEGIC_MERGE_PATCH + ")");
    }
  }

  /** RFC 7386 on {@code target} (changed in place when it is an object). */
  private static JsonNode merge(@Nullable JsonNode target, JsonNode patch) {
    if (!patch.isObject()) {
      return patch.deepCopy();
    }
    ObjectNode out = target != null && target.isObject() ? (ObjectNode) target : JsonNodeFactory.instance.objectNode();
    for (Map.Entry<String, JsonNode> e : patch.properties()) {
      if (e.getValue().isNull()) {
        out.remove(e.getKey());
      } else {
        out.set(e.getKey(), merge(out.get(e.getKey()), e.getValue()));
      }
    }
    return out;
  }

  private static JsonNode strategicMerge(@Nullable JsonNode target, JsonNode patch, String path) {
    if (!patch.isObject()) {
      return patch.deepCopy();
    }
    String directive = patch.path(DIRECTIVE).asString("merge");
    if (directive.equals("replace")) {
      ObjectNode replacement = ((ObjectNode) patch).deepCopy();
      replacement.remove(DIRECTIVE);
      return replacement;
    }
    if (!directive.equals("merge")) {
      throw new PatchException(422, "unsupported $patch directive '" + directive + "' at " + (path.isEmpty() ? "the object's root" : path));
    }
    ObjectNode out = target != null && target.isObject() ? (ObjectNode) target : JsonNodeFactory.instance.objectNode();
    for (Map.Entry<String, JsonNode> e : patch.properties()) {
      String key = e.getKey();
      JsonNode value = e.getValue();
      if (key.equals(DIRECTIVE) || key.startsWith(ELEMENT_ORDER)) {
        continue; // the order of merged lists: the stand-in keeps stored elements in place and appends new ones
      }
      if (key.startsWith("$")) {
        throw new PatchException(422, "unsupported strategic merge directive '" + key + "' at " + (path.isEmpty() ? "the object's root" : path));
      }
      String field = path.isEmpty() ? key : path + "." + key;
      if (value.isNull()) {
        out.remove(key);
      } else if (value.isArray() && MERGE_KEYS.containsKey(field) && out.path(key).isArray()) {
        out.set(key, mergeByKey((ArrayNode) out.get(key), (ArrayNode) value, MERGE_KEYS.get(field), field));
      } else if (value.isArray() && MERGED_STRING_LISTS.contains(field) && out.path(key).isArray()) {
        ArrayNode union = ((ArrayNode) out.get(key)).deepCopy();
        value.forEach(v -> {
          if (!contains(union, v)) {
            union.add(v.deepCopy());
          }
        });
        out.set(key, union);
      } else if (value.isArray()) {
        out.set(key, elementsOf(value, field));
      } else {
        out.set(key, strategicMerge(out.get(key), value, field));
      }
    }
    return out;
  }

  /** A list set whole: its elements as written, less the directives a list of new elements may carry. */
  private static ArrayNode elementsOf(JsonNode list, String field) {
    ArrayNode out = JsonNodeFactory.instance.arrayNode();
    for (JsonNode element : list) {
      if (element.isObject() && element.has(DIRECTIVE)) {
        if (element.path(DIRECTIVE).asString("").equals("delete")) {
          continue;
        }
        ObjectNode copy = ((ObjectNode) element).deepCopy();
        copy.remove(DIRECTIVE);
        out.add(strategicMerge(null, copy, field + "[]"));
      } else {
        out.add(element.isObject() ? strategicMerge(null, element, field + "[]") : element.deepCopy());
      }
    }
    return out;
  }

  private static ArrayNode mergeByKey(ArrayNode stored, ArrayNode patch, String mergeKey, String field) {
    ArrayNode out = stored.deepCopy();
    for (JsonNode element : patch) {
      if (!element.isObject() || !element.has(mergeKey)) {
        throw new PatchException(422, field + ": an element of a strategic merge patch needs its merge key '" + mergeKey + "'");
      }
      JsonNode key = element.get(mergeKey);
      int at = indexOf(out, mergeKey, key);
      if (element.path(DIRECTIVE).asString("").equals("delete")) {
        if (at >= 0) {
          out.remove(at);
        }
      } else if (at >= 0) {
        out.set(at, strategicMerge(out.get(at), element, field + "[]"));
      } else {
        out.add(strategicMerge(null, element, field + "[]"));
      }
    }
    return out;
  }

  private static int indexOf(ArrayNode list, String mergeKey, JsonNode key) {
    for (int i = 0; i < list.size(); i++) {
      if (key.equals(list.get(i).get(mergeKey))) {
        return i;
      }
    }
    return -1;
  }

  private static boolean contains(ArrayNode list, JsonNode value) {
    for (JsonNode element : list) {
      if (element.equals(value)) {
        return true;
      }
    }
    return false;
  }
}
