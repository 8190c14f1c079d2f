package io.vgpu.k8s.admission;

import java.util.HashSet;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Computes an RFC 6902 JSON Patch that turns one document into another, deterministically: objects are
 * compared key by key (removals and changes in the original's key order, then additions in the target's
 * order); arrays element by element, extra target elements added in ascending index order and extra
 * original elements removed from the highest index down; anything else that differs is replaced.
 */
public final class JsonPatchDiff {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private JsonPatchDiff() {}

  /** The operations that turn {@code from} into {@code to}; empty when they are equal. */
  public static ArrayNode diff(JsonNode from, JsonNode to) {
    ArrayNode ops = NODES.arrayNode();
    diff("", from, to, ops);
    return ops;
  }

  private static void diff(String path, JsonNode from, JsonNode to, ArrayNode ops) {
    if (from.equals(to)) {
      return;
    }
    if (from.isObject() && to.isObject()) {
      diffObjects(path, from, to, ops);
    } else if (from.isArray() && to.isArray()) {
      diffArrays(path, from, to, ops);
    } else {
      ops.add(op("replace", path).set("value", to.deepCopy()));
    }
  }

  private static void diffObjects(String path, JsonNode from, JsonNode to, ArrayNode ops) {
    Set<String> seen = new HashSet<>();
    for (String key : from.propertyNames()) {
      seen.add(key);
      String child = path + "/" + escape(key);
      JsonNode target = to.get(key);
      if (target == null) {
        ops.add(op("remove", child));
      } else {
        diff(child, from.get(key), target, ops);
      }
    }
    for (String key : to.propertyNames()) {
      if (!seen.contains(key)) {
        ops.add(op("add", path + "/" + escape(key)).set("value", to.get(key).deepCopy()));
      }
    }
  }

  private static void diffArrays(String path, JsonNode from, JsonNode to, ArrayNode ops) {
    int common = Math.min(from.size(), to.size());
    for (int i = 0; i < common; i++) {
      diff(path + "/" + i, from.get(i), to.get(i), ops);
    }
    for (int i = common; i < to.size(); i++) {
      ops.add(op("add", path + "/" + i).set("value", to.get(i).deepCopy()));
    }
    for (int i = from.size() - 1; i >= common; i--) {
      ops.add(op("remove", path + "/" + i));
    }
  }

  private static ObjectNode op(String name, String path) {
    ObjectNode op = NODES.objectNode();
    op.put("op", name);
    op.put("path", path);
    return op;
  }

  /** RFC 6901 escaping of one reference token: {@code ~} as {@code ~0}, {@code /} as {@code ~1}. */
  static String escape(String key) {
    return key.replace("~", "~0").replace("/", "~1");
  }
}
