package io.vgpu.examples.lab.apiserver;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.dsl.HttpMethod;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.vgpu.k8s.pod.PodJson;
import java.net.URI;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * fabric8's CRUD mock API server plus what a real API server does that it does not: authentication (a
 * bearer token the stand-in issued, else 401); admission of every write ({@link AdmittedWrites}: the
 * mutating webhook on pod creation, the ValidatingAdmissionPolicies on every create, update, patch,
 * status write, binding and delete, from every user); patches as the API applies them ({@link
 * ObjectPatch}); the Binding subresource ({@code pods/{name}/binding}) and the {@code bindings}
 * collection, which set {@code spec.nodeName} once and answer 409 Conflict after; and the {@code
 * spec.nodeName} field selector on pod lists and watches (the node agent follows its node's pods that
 * way). Everything else — storage, watches, Events, Leases, ResourceQuotas — is fabric8's.
 */
final class LabApiDispatcher extends Dispatcher {
  private static final JsonMapper JSON = PodJson.mapper();
  private static final Pattern POD_LIST = Pattern.compile("/api/v1(/namespaces/[^/]+)?/pods");
  private static final String NODE_NAME_FIELD = "spec.nodeName";
  /** What {@code /version} answers: the Kubernetes release the lab's manifests are written for. */
  private static final String VERSION =
      "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.0\",\"gitCommit\":\"\",\"gitTreeState\":\"clean\","
          + "\"buildDate\":\"2024-08-13T07:28:49Z\",\"goVersion\":\"go1.22.5\",\"compiler\":\"gc\",\"platform\":\"linux/amd64\"}";

  private final IndexedCrudDispatcher crud = new IndexedCrudDispatcher();
  private final AtomicReference<@Nullable AdmissionWebhookCaller> admission = new AtomicReference<>();
  private final AdmittedWrites writes = new AdmittedWrites(crud, admission::get);
  private final BearerTokens tokens;
  private final Object bindingLock = new Object();

  /** A dispatcher that takes the users of {@code tokens}. */
  LabApiDispatcher(BearerTokens tokens) {
    this.tokens = tokens;
  }

  /**
   * Calls the webhooks of the named {@code MutatingWebhookConfiguration}, as stored at each pod creation,
   * on pod creation (until then pods are admitted as sent).
   */
  void admission(String configurationName, URI serviceBase) {
    String path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/" + configurationName;
    admission.set(new AdmissionWebhookCaller(configurationName, () -> {
      MockResponse response = crud.handleGet(path);
      return response.code() == 200 ? JSON.readTree(response.getBody().getBytes()) : null;
    }, serviceBase));
  }

  /** Adds a stand-in's webhook, called on every pod creation before the configured ones. */
  void admission(PodAdmission admission) {
    writes.add(admission);
  }

  /**
   * Stores objects as if each had been created through the API (a name, UID, resource version and
   * creation time; a second object of the same name is refused), without HTTP, admission or the
   * client's round trip.
   *
   * @throws IllegalArgumentException naming the first object the store refuses
   */
  void load(List<? extends HasMetadata> objects) {
    for (HasMetadata object : objects) {
      String path = collectionPath(object);
      MockResponse created = crud.handleCreate(AdmittedWrites.Requests.of(HttpMethod.POST, path, Serialization.asJson(object)));
      if (created.code() >= 300) {
        throw new IllegalArgumentException("the lab's API server refused " + object.getKind() + " " + object.getMetadata().getName() + " (HTTP " + created.code() + "): "
            + (created.getBody() == null ? "" : created.getBody().readUtf8()));
      }
    }
  }

  /** Where a client would create {@code object}: its API group's path, its namespace if it has one, its plural. */
  private static String collectionPath(HasMetadata object) {
    String apiVersion = object.getApiVersion() == null ? HasMetadata.getApiVersion(object.getClass()) : object.getApiVersion();
    String group = apiVersion.contains("/") ? "/apis/" + apiVersion : "/api/" + apiVersion;
    String namespace = object.getMetadata().getNamespace();
    return group + (namespace == null || namespace.isEmpty() ? "" : "/namespaces/" + namespace) + "/" + HasMetadata.getPlural(object.getClass());
  }

  @Override
  public MockResponse dispatch(RecordedRequest request) {
    try {
      Optional<UserInfo> user = tokens.authenticate(request);
      if (user.isEmpty()) {
        return Statuses.of(401, "Unauthorized", "Unauthorized");
      }
      URI uri = URI.create(request.getPath());
      String path = uri.getRawPath();
      HttpMethod method = request.method();
      if (method == HttpMethod.GET) {
        return read(request, uri);
      }
      Optional<ApiPath> resource = ApiPath.parse(path);
      if (resource.isEmpty()) {
        return crud.dispatch(request);
      }
      ApiPath p = resource.get();
      return switch (method) {
        case POST -> {
          if (p.group().isEmpty() && p.resource().equals("pods") && p.subresource().equals("binding")) {
            yield bind(user.get(), p, JSON.readTree(body(request)));
          }
          if (p.group().isEmpty() && p.resource().equals("bindings") && p.name().isEmpty()) {
            yield bind(user.get(), p, JSON.readTree(body(request)));
          }
          yield p.name().isEmpty() ? writes.create(request, p, user.get()) : crud.dispatch(request);
        }
        case PUT -> p.name().isEmpty() ? crud.dispatch(request) : writes.update(request, p, user.get());
        case PATCH -> p.name().isEmpty() ? crud.dispatch(request) : writes.patch(request, p, user.get());
        case DELETE -> writes.delete(request, p, user.get());
        default -> crud.dispatch(request);
      };
    } catch (RuntimeException | LinkageError e) {
      // a stand-in's own failure: one line in the response, as the API server answers an internal error
      return Statuses.of(500, "InternalError", "the lab's API server failed on " + request.getRequestLine() + ": " + e);
    }
  }

  private MockResponse read(RecordedRequest request, URI uri) {
    String path = uri.getRawPath();
    if (path.equals("/version")) {
      // fabric8's CRUD store would answer with every object it holds (the path names no kind)
      return new MockResponse().setResponseCode(200).setHeader("Content-Type", "application/json").setBody(VERSION);
    }
    if (POD_LIST.matcher(path).matches()) {
      String nodeName = nodeNameSelector(uri.getRawQuery());
      if (nodeName != null) {
        return podsOnNode(request, uri, nodeName);
      }
    }
    return fromResourceVersion(crud.dispatch(request), uri.getRawQuery());
  }

  private static String body(RecordedRequest request) {
    return request.getBody() == null ? "" : new String(request.getBody().getBytes(), StandardCharsets.UTF_8);
  }

  /**
   * Sets the pod's node once, with the Binding's annotations, as the API server's binding storage does;
   * a second binding conflicts.
   */
  private MockResponse bind(UserInfo user, ApiPath path, JsonNode binding) {
    String namespace = path.namespace();
    String name = path.name().isEmpty() ? binding.path("metadata").path("name").asString("") : path.name();
    String target = binding.path("target").path("name").asString("");
    if (name.isEmpty() || target.isEmpty()) {
      return Statuses.of(400, "BadRequest", "a Binding needs metadata.name and target.name");
    }
    if (binding instanceof ObjectNode b) {
      b.withObject("metadata").put("namespace", namespace);
      b.put("apiVersion", b.path("apiVersion").asString("v1"));
      b.put("kind", b.path("kind").asString("Binding"));
    }
    Optional<MockResponse> denied = writes.admitBinding(path, user, binding);
    if (denied.isPresent()) {
      return denied.get();
    }
    String podPath = "/api/v1/namespaces/" + namespace + "/pods/" + name;
    synchronized (bindingLock) {
      MockResponse current = crud.handleGet(podPath);
      if (current.code() != 200) {
        return Statuses.of(404, "NotFound", "pods \"" + name + "\" not found");
      }
      ObjectNode pod = (ObjectNode) JSON.readTree(current.getBody().getBytes());
      String uid = binding.path("metadata").path("uid").asString("");
      if (!uid.isEmpty() && !uid.equals(pod.path("metadata").path("uid").asString(""))) {
        return Statuses.of(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + name + "\": the pod's UID is not " + uid);
      }
      String assigned = pod.path("spec").path("nodeName").asString("");
      if (!assigned.isEmpty()) {
        return Statuses.of(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + name + "\": pod " + name + " is already assigned to node \"" + assigned + "\"");
      }
      pod.withObject("spec").put("nodeName", target);
      // As the API server's binding storage does: the Binding's annotations are merged into the pod's.
      JsonNode annotations = binding.path("metadata").path("annotations");
      if (annotations.isObject() && !annotations.isEmpty()) {
        ObjectNode podAnnotations = pod.withObject("metadata").withObject("annotations");
        annotations.properties().forEach(e -> podAnnotations.set(e.getKey(), e.getValue()));
      }
      ArrayNode conditions = pod.withObject("status").withArray("conditions");
      List<JsonNode> kept = new ArrayList<>();
      conditions.forEach(c -> {
        if (!c.path("type").asString("").equals("PodScheduled")) {
          kept.add(c);
        }
      });
      conditions.removeAll();
      kept.forEach(conditions::add);
      ObjectNode scheduled = conditions.addObject();
      scheduled.put("type", "PodScheduled");
      scheduled.put("status", "True");
      scheduled.put("lastTransitionTime", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
      MockResponse updated = crud.handleUpdate(AdmittedWrites.Requests.of(HttpMethod.PUT, podPath, JSON.writeValueAsString(pod)));
      if (updated.code() >= 300) {
        return updated;
      }
    }
    return Statuses.of(201, "Success", "");
  }

  private MockResponse podsOnNode(RecordedRequest request, URI uri, String nodeName) {
    String query = withoutNodeNameSelector(uri.getRawQuery());
    String path = uri.getRawPath() + (query.isEmpty() ? "" : "?" + query);
    if (uri.getRawQuery() != null && uri.getRawQuery().contains("watch=true")) {
      MockResponse watch = fromResourceVersion(crud.dispatch(new RecordedRequest(request.getHttpVersion(), request.method(), path, request.getHeaders(), request.getBody())), query);
      return watch.getWebSocketListener() == null ? watch : watch.withWebSocketUpgrade(new NodeNameWatchFilter(watch.getWebSocketListener(), nodeName));
    }
    return new MockResponse().setResponseCode(200).setHeader("Content-Type", "application/json").setBody(crud.podsOnNode(path, nodeName));
  }

  /**
   * A watch that names a resource version gets only what changed after it (fabric8's replays every
   * object first); every watch's end reaches fabric8 off the event loop ({@link FilteringWatchListener}).
   */
  private static MockResponse fromResourceVersion(MockResponse response, @Nullable String rawQuery) {
    if (response.getWebSocketListener() == null) {
      return response;
    }
    long since = rawQuery == null ? 0 : ResourceVersionWatchFilter.since(rawQuery);
    return response.withWebSocketUpgrade(
        since == 0 ? FilteringWatchListener.unfiltered(response.getWebSocketListener()) : new ResourceVersionWatchFilter(response.getWebSocketListener(), since));
  }

  private static @Nullable String nodeNameSelector(@Nullable String rawQuery) {
    for (String requirement : fieldSelector(rawQuery)) {
      String[] kv = requirement.split("==?", 2);
      if (kv.length == 2 && kv[0].equals(NODE_NAME_FIELD)) {
        return kv[1];
      }
    }
    return null;
  }

  private static List<String> fieldSelector(@Nullable String rawQuery) {
    if (rawQuery == null) {
      return List.of();
    }
    for (String param : rawQuery.split("&")) {
      if (param.startsWith("fieldSelector=")) {
        return List.of(URLDecoder.decode(param.substring("fieldSelector=".length()), StandardCharsets.UTF_8).split(","));
      }
    }
    return List.of();
  }

  private static String withoutNodeNameSelector(String rawQuery) {
    List<String> params = new ArrayList<>();
    for (String param : rawQuery.split("&")) {
      if (!param.startsWith("fieldSelector=")) {
        params.add(param);
        continue;
      }
      List<String> rest = new ArrayList<>();
      for (String r : fieldSelector(param)) {
        if (!r.startsWith(NODE_NAME_FIELD + "=")) {
          rest.add(r);
        }
      }
      if (!rest.isEmpty()) {
        params.add("fieldSelector=" + URLEncoder.encode(String.join(",", rest), StandardCharsets.UTF_8));
      }
    }
    return String.join("&", params);
  }
}
