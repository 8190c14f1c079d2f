package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.server.HttpService;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The mutating admission webhook: AdmissionReview {@code admission.k8s.io/v1} and {@code v1beta1} in,
 * the same version out, around the pure {@link AdmissionMutator}. Mutations travel as a base64 JSON
 * Patch; a denial carries the mutator's one-line message. Scheduler-owned annotations a pod was created
 * with are removed (each removal logged); the label {@code hami.io/webhook=ignore} counts only in the
 * namespaces the device config lists (see {@link AdmissionMutator}). Each denial is one log line and
 * an Event on the pod it names.
 */
public final class AdmissionWebhook {
  /** The label that exempts a pod in the listed namespaces (or, through the webhook configuration, a namespace). */
  public static final String IGNORE_LABEL = AdmissionMutator.IGNORE_LABEL;

  private static final Logger LOG = LoggerFactory.getLogger(AdmissionWebhook.class);

  private static final JsonMapper MAPPER = PodJson.mapper();

  private final Function<Pod, AdmissionResult> decision;
  private final @Nullable EventRecorder events;

  /** A webhook deciding with {@code mutator} against the ledger's quotas, logging its denials. */
  public AdmissionWebhook(AdmissionMutator mutator, Function<String, QuotaUsage> quotas) {
    this(mutator, quotas, null);
  }

  /**
   * A webhook deciding with {@code mutator} against the ledger's quotas; each denial is one log line
   * and, for a pod with a name, a Warning Event {@code AdmissionDenied} on it.
   */
  public AdmissionWebhook(AdmissionMutator mutator, Function<String, QuotaUsage> quotas, @Nullable EventRecorder events) {
    this(pod -> mutator.admit(pod, quotas), events);
  }

  /**
   * A webhook deciding with {@code decision} (under KAI Scheduler, {@link io.vgpu.k8s.kai.KaiPodMutation});
   * each denial is one log line and, for a pod with a name, a Warning Event {@code AdmissionDenied} on it.
   */
  public AdmissionWebhook(Function<Pod, AdmissionResult> decision, @Nullable EventRecorder events) {
    this.decision = decision;
    this.events = events;
  }

  /**
   * Answers one AdmissionReview.
   *
   * @throws HttpService.BadRequest when the body is not an AdmissionReview with a request
   */
  public byte[] review(byte[] body) throws HttpService.BadRequest {
    JsonNode review;
    try {
      review = MAPPER.readTree(body);
    } catch (JacksonException e) {
      throw new HttpService.BadRequest("malformed AdmissionReview JSON: " + HttpService.oneLine(e.getOriginalMessage()));
    }
    JsonNode request = review.path("request");
    String apiVersion = review.path("apiVersion").asString("admission.k8s.io/v1");
    if (!request.isObject() || request.path("uid").asString("").isEmpty()) {
      throw new HttpService.BadRequest("AdmissionReview has no request.uid");
    }
    ObjectNode response = MAPPER.createObjectNode();
    response.put("uid", request.path("uid").asString());
    decide(request, response);
    ObjectNode out = MAPPER.createObjectNode();
    out.put("apiVersion", apiVersion.startsWith("admission.k8s.io/") ? apiVersion : "admission.k8s.io/v1");
    out.put("kind", "AdmissionReview");
    out.set("response", response);
    return out.toString().getBytes(StandardCharsets.UTF_8);
  }

  private void decide(JsonNode request, ObjectNode response) {
    if (!"CREATE".equals(request.path("operation").asString("CREATE")) || !request.path("object").isObject()) {
      response.put("allowed", true);
      return;
    }
    ObjectNode object = (ObjectNode) request.path("object").deepCopy();
    ObjectNode metadata = object.has("metadata") && object.get("metadata").isObject() ? (ObjectNode) object.get("metadata") : object.putObject("metadata");
    // A pod created with generateName has no name yet, and the object may omit its namespace: fill both
    // in on both sides of the diff, so the patch never touches them.
    boolean generatedName = metadata.path("name").asString("").isEmpty();
    if (generatedName) {
      metadata.put("name", metadata.path("generateName").asString("pod") + "(generated)");
    }
    if (metadata.path("namespace").asString("").isEmpty()) {
      metadata.put("namespace", request.path("namespace").asString("default"));
    }
    Pod pod;
    try {
      pod = PodJson.fromTree(object);
    } catch (JacksonException e) {
      deny(response, 400, "request.object is not a Pod: " + HttpService.oneLine(e.getOriginalMessage()));
      return;
    }
    AdmissionResult result = decision.apply(pod);
    for (String removed : result.removed()) {
      LOG.info("pod {}/{}: removed {} it was created with: only the scheduler writes it",
          pod.getMetadata().getNamespace(), pod.getMetadata().getName(), removed);
    }
    if (!result.allowed()) {
      LOG.info("pod {}/{} denied: {}", pod.getMetadata().getNamespace(), pod.getMetadata().getName(), result.message());
      if (events != null && !generatedName) {
        events.warning(pod, "AdmissionDenied", result.message());
      }
      deny(response, 403, result.message());
      return;
    }
    response.put("allowed", true);
    if (!result.patch().isEmpty()) {
      response.put("patchType", "JSONPatch");
      response.put("patch", Base64.getEncoder().encodeToString(result.patch().toString().getBytes(StandardCharsets.UTF_8)));
    }
  }

  private static void deny(ObjectNode response, int code, String message) {
    response.put("allowed", false);
    ObjectNode status = response.putObject("status");
    status.put("code", code);
    status.put("message", message);
  }
}
