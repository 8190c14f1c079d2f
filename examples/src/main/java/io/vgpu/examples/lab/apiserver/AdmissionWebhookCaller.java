package io.vgpu.examples.lab.apiserver;

import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import io.vgpu.examples.lab.components.TlsContexts;
import io.vgpu.k8s.pod.PodJson;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Calls the mutating webhooks of a {@code MutatingWebhookConfiguration} on pod creation as the API
 * server does: the configuration as it is stored now (its {@code caBundle} patched by whoever made the
 * serving certificate), the webhook's rules, namespace and object selectors and CEL match conditions,
 * its first supported AdmissionReview version, its timeout and failure policy, and its JSON Patch applied
 * to the pod. Only {@code clientConfig.service} is mapped to a place: the lab's address of the scheduler.
 */
public final class AdmissionWebhookCaller {
  private static final JsonMapper JSON = PodJson.mapper();
  private static final CelCompiler CEL =
      CelCompilerFactory.standardCelCompilerBuilder().setStandardMacros(CelStandardMacro.STANDARD_MACROS).addVar("object", SimpleType.DYN).build();
  private static final CelRuntime CEL_RUNTIME = CelRuntimeFactory.standardCelRuntimeBuilder().build();

  private final String name;
  private final Supplier<@Nullable JsonNode> stored;
  private final URI serviceBase;
  private final Map<String, HttpClient> byBundle = new ConcurrentHashMap<>();
  private final Map<String, CelRuntime.Program> conditions = new ConcurrentHashMap<>();

  /**
   * The outcome of admission.
   *
   * @param allowed whether the pod may be created
   * @param pod the pod to store (mutated), when allowed
   * @param message the API server's error when denied
   */
  public record Outcome(boolean allowed, JsonNode pod, String message) {}

  /**
   * A caller.
   *
   * @param name the {@code MutatingWebhookConfiguration}'s name (for messages)
   * @param stored the configuration as stored now, read at every call; null when there is none. The
   *     API server's own store, not a request to it: a webhook call runs inside the request that creates the pod
   * @param serviceBase where the webhooks' Service is reached in the lab, e.g. {@code https://127.0.0.1:40123}
   */
  public AdmissionWebhookCaller(String name, Supplier<@Nullable JsonNode> stored, URI serviceBase) {
    this.name = name;
    this.stored = stored;
    this.serviceBase = serviceBase;
  }

  /** The {@code MutatingWebhookConfiguration}'s name. */
  public String name() {
    return name;
  }

  /**
   * Runs every matching webhook on a pod being created.
   *
   * @param pod the pod as submitted (namespace set)
   * @param namespaceLabels the labels of the pod's namespace
   * @param user who creates it (the review's {@code userInfo})
   */
  public Outcome admitCreate(JsonNode pod, Map<String, String> namespaceLabels, UserInfo user) {
    JsonNode configuration = stored.get();
    if (configuration == null) {
      return new Outcome(true, pod, "");
    }
    JsonNode current = pod;
    for (JsonNode webhook : configuration.path("webhooks")) {
      String webhookName = webhook.path("name").asString("");
      String policy = webhook.path("failurePolicy").asString("Fail");
      try {
        if (!matches(webhook, current, namespaceLabels)) {
          continue;
        }
        JsonNode response = call(webhook, current, user);
        if (!response.path("allowed").asBoolean(false)) {
          String message = response.path("status").path("message").asString("");
          return new Outcome(false, current, "admission webhook \"" + webhookName + "\" denied the request" + (message.isEmpty() ? "" : ": " + message));
        }
        String patch = response.path("patch").asString("");
        if (!patch.isEmpty()) {
          ArrayNode ops = (ArrayNode) JSON.readTree(Base64.getDecoder().decode(patch));
          current = io.fabric8.zjsonpatch.JsonPatch.apply(ops, current);
        }
      } catch (Exception e) {
        if (policy.equals("Ignore")) {
          continue;
        }
        return new Outcome(false, current, "Internal error occurred: failed calling webhook \"" + webhookName + "\": " + oneLine(e));
      }
    }
    return new Outcome(true, current, "");
  }

  private boolean matches(JsonNode webhook, JsonNode pod, Map<String, String> namespaceLabels) throws CelValidationException, CelEvaluationException {
    boolean ruleMatches = false;
    for (JsonNode rule : webhook.path("rules")) {
      if (contains(rule.path("operations"), "CREATE") && contains(rule.path("apiGroups"), "") && contains(rule.path("apiVersions"), "v1")
          && contains(rule.path("resources"), "pods")) {
        ruleMatches = true;
      }
    }
    if (!ruleMatches) {
      return false;
    }
    Map<String, String> podLabels = JSON.convertValue(pod.path("metadata").path("labels"), JSON.getTypeFactory().constructMapType(Map.class, String.class, String.class));
    if (!LabelSelectors.matches(webhook.path("namespaceSelector"), namespaceLabels)
        || !LabelSelectors.matches(webhook.path("objectSelector"), podLabels == null ? Map.of() : podLabels)) {
      return false;
    }
    // Match conditions: all must hold; the object is the pod as the API server would pass it.
    Object object = JSON.convertValue(pod, Object.class);
    for (JsonNode condition : webhook.path("matchConditions")) {
      CelRuntime.Program program = program(condition.path("expression").asString(""));
      if (!Boolean.TRUE.equals(program.eval(Map.of("object", object)))) {
        return false;
      }
    }
    return true;
  }

  private CelRuntime.Program program(String expression) throws CelValidationException, CelEvaluationException {
    CelRuntime.Program cached = conditions.get(expression);
    if (cached == null) {
      CelAbstractSyntaxTree ast = CEL.compile(expression).getAst();
      cached = CEL_RUNTIME.createProgram(ast);
      conditions.put(expression, cached);
    }
    return cached;
  }

  private static boolean contains(JsonNode list, String value) {
    for (JsonNode item : list) {
      if (item.asString("").equals(value) || item.asString("").equals("*")) {
        return true;
      }
    }
    return false;
  }

  /** An HTTP client trusting exactly the webhook's caBundle, as the API server does. */
  private HttpClient http(JsonNode webhook) throws Exception {
    String bundle = webhook.path("clientConfig").path("caBundle").asString("");
    HttpClient cached = byBundle.get(bundle);
    if (cached == null) {
      cached = HttpClient.newBuilder()
          .sslContext(TlsContexts.client(TlsContexts.caBundle(bundle, "the caBundle of " + name), Optional.empty()))
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
      byBundle.put(bundle, cached);
    }
    return cached;
  }

  private JsonNode call(JsonNode webhook, JsonNode pod, UserInfo user) throws Exception {
    String version = "v1";
    for (JsonNode v : webhook.path("admissionReviewVersions")) {
      version = v.asString("v1");
      break;
    }
    ObjectNode review = JSON.createObjectNode();
    review.put("apiVersion", "admission.k8s.io/" + version);
    review.put("kind", "AdmissionReview");
    ObjectNode request = review.putObject("request");
    request.put("uid", UUID.randomUUID().toString());
    request.putObject("kind").put("group", "").put("version", "v1").put("kind", "Pod");
    request.putObject("resource").put("group", "").put("version", "v1").put("resource", "pods");
    request.set("requestKind", request.path("kind").deepCopy());
    request.set("requestResource", request.path("resource").deepCopy());
    request.put("name", pod.path("metadata").path("name").asString(""));
    request.put("namespace", pod.path("metadata").path("namespace").asString(""));
    request.put("operation", "CREATE");
    request.set("userInfo", JSON.valueToTree(user.toCel()));
    request.set("object", pod);
    request.putNull("oldObject");
    request.put("dryRun", false);
    request.putObject("options").put("apiVersion", "meta.k8s.io/v1").put("kind", "CreateOptions");
    JsonNode service = webhook.path("clientConfig").path("service");
    String path = service.path("path").asString("/");
    int timeout = webhook.path("timeoutSeconds").asInt(10);
    HttpRequest post =
        HttpRequest.newBuilder(serviceBase.resolve(path + "?timeout=" + timeout + "s"))
            .timeout(Duration.ofSeconds(timeout))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(review)))
            .build();
    HttpResponse<String> response = http(webhook).send(post, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (response.statusCode() != 200) {
      throw new IllegalStateException("the server responded with HTTP " + response.statusCode());
    }
    return JSON.readTree(response.body()).path("response");
  }

  private static String oneLine(Exception e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return message.lines().findFirst().orElse("").trim();
  }
}
