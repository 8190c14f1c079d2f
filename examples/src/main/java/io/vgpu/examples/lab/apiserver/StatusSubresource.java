package io.vgpu.examples.lab.apiserver;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What a write to an object's {@code status} subresource changes, as kube-apiserver's status strategies
 * decide: for Pods and Nodes everything but the spec (so labels and annotations too, which is why a
 * policy protecting them must match {@code pods/status}; a Pod's owner references stay), for any other
 * resource the status only.
 */
final class StatusSubresource {
  private StatusSubresource() {}

  /**
   * The object a status write stores.
   *
   * @param current the stored object
   * @param written the object the write sends (a replacement, or the stored object patched)
   */
  static JsonNode afterWrite(ApiPath path, JsonNode current, JsonNode written) {
    boolean podOrNode = path.group().isEmpty() && (path.resource().equals("pods") || path.resource().equals("nodes"));
    ObjectNode out;
    if (podOrNode) {
      out = (ObjectNode) written.deepCopy();
      copy(current, out, "spec");
      if (path.resource().equals("pods")) {
        copy(current.path("metadata"), out.withObject("metadata"), "ownerReferences");
      }
    } else {
      out = (ObjectNode) current.deepCopy();
      copy(written, out, "status");
      String version = written.path("metadata").path("resourceVersion").asString("");
      if (!version.isEmpty()) {
        out.withObject("metadata").put("resourceVersion", version); // the write's precondition, checked when stored
      }
    }
    return out;
  }

  /** Sets {@code to.field} to {@code from.field}, or removes it when {@code from} has none. */
  private static void copy(JsonNode from, ObjectNode to, String field) {
    JsonNode value = from.get(field);
    if (value == null) {
      to.remove(field);
    } else {
      to.set(field, value.deepCopy());
    }
  }
}
