package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.WebSocketListener;
import io.vgpu.k8s.pod.PodJson;
import java.util.HashSet;
import java.util.Set;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A pod watch with the field selector {@code spec.nodeName=<node>}, as the API server serves it: of the
 * unfiltered watch's events it passes those about pods on the node, turns a pod's arrival on the node
 * into ADDED and its departure (or deletion) into DELETED, and drops the rest.
 */
final class NodeNameWatchFilter extends FilteringWatchListener {
  private final String node;
  private final Set<String> sent = new HashSet<>();

  NodeNameWatchFilter(WebSocketListener inner, String node) {
    super(inner);
    this.node = node;
  }

  /** The event to send for an unfiltered one, or null to drop it. */
  @Override
  synchronized String filter(String text) {
    JsonNode event;
    try {
      event = PodJson.mapper().readTree(text);
    } catch (JacksonException e) {
      return text;
    }
    String type = event.path("type").asString("");
    JsonNode object = event.path("object");
    if (!(event instanceof ObjectNode out) || !object.isObject() || !(type.equals("ADDED") || type.equals("MODIFIED") || type.equals("DELETED"))) {
      return text;
    }
    String uid = object.path("metadata").path("uid").asString("");
    boolean here = node.equals(object.path("spec").path("nodeName").asString(""));
    boolean known = sent.contains(uid);
    if (here && !type.equals("DELETED")) {
      sent.add(uid);
      out.put("type", known ? "MODIFIED" : "ADDED");
      return out.toString();
    }
    if (known) {
      sent.remove(uid);
      out.put("type", "DELETED");
      return out.toString();
    }
    return null;
  }
}
