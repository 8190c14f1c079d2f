package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.http.MockResponse;
import io.vgpu.k8s.pod.PodJson;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** The API server's answers that are not objects: {@code Status} bodies with their HTTP code. */
final class Statuses {
  private static final JsonMapper JSON = PodJson.mapper();

  private Statuses() {}

  /** A Status: Success under 300, Failure from there, with the reason and (when not empty) the message. */
  static MockResponse of(int code, String reason, String message) {
    return response(status(code, reason, message));
  }

  /**
   * A refusal of admission, as kube-apiserver words it: the message names the resource and object, and
   * {@code details} carry them with the message as the cause.
   */
  static MockResponse denied(ValidatingPolicies.Denial denial, ApiPath path, String name) {
    ObjectNode status = status(denial.code(), denial.reason(), denial.statusMessage(path, name));
    ObjectNode details = status.putObject("details");
    if (!name.isEmpty()) {
      details.put("name", name);
    }
    details.put("group", path.group());
    details.put("kind", path.resource());
    details.putArray("causes").addObject().put("message", denial.refusal());
    return response(status);
  }

  private static ObjectNode status(int code, String reason, String message) {
    ObjectNode status = JSON.createObjectNode();
    status.put("apiVersion", "v1");
    status.put("kind", "Status");
    status.putObject("metadata");
    status.put("status", code < 300 ? "Success" : "Failure");
    if (!message.isEmpty()) {
      status.put("message", message);
    }
    status.put("reason", reason);
    status.put("code", code);
    return status;
  }

  private static MockResponse response(ObjectNode status) {
    int code = status.path("code").asInt();
    return new MockResponse().setResponseCode(code).setHeader("Content-Type", "application/json").setBody(JSON.writeValueAsString(status));
  }
}
