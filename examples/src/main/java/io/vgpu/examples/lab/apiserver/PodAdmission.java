package io.vgpu.examples.lab.apiserver;

import java.util.Optional;
import tools.jackson.databind.JsonNode;

/**
 * A mutating admission webhook of a stand-in (KAI's), run by the API server stand-in in its own process
 * at pod CREATE, before the deployment's webhooks, as the API server calls a configured webhook: it may
 * change the pod or deny it.
 */
public interface PodAdmission {
  /**
   * The outcome.
   *
   * @param pod the pod to go on with, when allowed
   * @param denial the webhook's message, when denied
   */
  record Result(JsonNode pod, Optional<String> denial) {}

  /** The webhook's name, as the API server names it in a denial. */
  String name();

  /**
   * Admits a pod being created.
   *
   * @param pod the pod as submitted (namespace set)
   * @param user who creates it
   */
  Result admit(JsonNode pod, UserInfo user);
}
