package io.vgpu.examples.lab.apiserver;

import java.util.Optional;
import tools.jackson.databind.JsonNode;

/**
 * The admission webhooks of a stand-in (KAI's), run by the API server stand-in in its own process at pod
 * CREATE as the API server calls configured ones: {@link #mutate} among the mutating webhooks in the
 * order of their configurations' names (the deployment's included), then {@link #validate} in the
 * validating phase, after every mutation.
 */
public interface PodAdmission {
  /**
   * The outcome.
   *
   * @param pod the pod to go on with, when allowed
   * @param denial the webhook's message, when denied
   */
  record Result(JsonNode pod, Optional<String> denial) {}

  /** The webhook configuration's name: it orders the mutating webhooks, and the API server names it in a denial. */
  String name();

  /**
   * The mutating webhook on a pod being created.
   *
   * @param pod the pod as the webhooks before it left it (namespace set)
   * @param user who creates it
   */
  Result mutate(JsonNode pod, UserInfo user);

  /**
   * The validating webhook on the pod every mutating webhook has seen.
   *
   * @return the webhook's message when it denies the pod
   */
  Optional<String> validate(JsonNode pod, UserInfo user);
}
