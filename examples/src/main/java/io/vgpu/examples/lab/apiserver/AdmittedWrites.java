package io.vgpu.examples.lab.apiserver;

import io.fabric8.mockwebserver.dsl.HttpMethod;
import io.fabric8.mockwebserver.http.Buffer;
import io.fabric8.mockwebserver.http.Headers;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.vgpu.k8s.pod.PodJson;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The writes of the API (create, update, patch, delete, and the status subresource) as kube-apiserver
 * carries them out: the object the write would store is computed first — a patch applied to the stored
 * object, a status write keeping what the status subresource may not change — then admitted (the
 * mutating webhook on pod creation, then the ValidatingAdmissionPolicies), and only an admitted object is
 * stored. A write and the read of the object it changes happen under the store's write lock, so that
 * what admission saw is what is stored. Without a policy, a create or update of anything but a pod is the
 * store's own, untouched.
 */
final class AdmittedWrites {
  private static final JsonMapper JSON = PodJson.mapper();
  private static final String POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
  private static final String BINDINGS = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

  private final IndexedCrudDispatcher crud;
  private final Supplier<@Nullable AdmissionWebhookCaller> webhooks;
  private final Object compiling = new Object();
  private final List<PodAdmission> inProcess = new java.util.concurrent.CopyOnWriteArrayList<>();
  private volatile Compiled compiled = new Compiled(-1, ValidatingPolicies.NONE);

  /** The policies compiled from the store as it was at a count of its policy changes. */
  private record Compiled(long changes, ValidatingPolicies policies) {}

  AdmittedWrites(IndexedCrudDispatcher crud, Supplier<@Nullable AdmissionWebhookCaller> webhooks) {
    this.crud = crud;
    this.webhooks = webhooks;
  }

  /** Adds a stand-in's webhook, called on pod creation before the configured ones. */
  void add(PodAdmission admission) {
    inProcess.add(admission);
  }

  /** The stored policies, compiled again only after the store's policies or bindings changed. */
  ValidatingPolicies policies() {
    long changes = crud.admissionPolicyChanges();
    Compiled current = compiled;
    if (current.changes() == changes) {
      return current.policies();
    }
    synchronized (compiling) {
      current = compiled;
      if (current.changes() != changes) {
        current = new Compiled(changes, ValidatingPolicies.compile(items(POLICIES), items(BINDINGS)));
        compiled = current;
      }
      return current.policies();
    }
  }

  private List<JsonNode> items(String path) {
    List<JsonNode> out = new ArrayList<>();
    MockResponse list = crud.handleGet(path);
    if (list.code() == 200) {
      JSON.readTree(list.getBody().getBytes()).path("items").forEach(out::add);
    }
    return out;
  }

  /** A create ({@code POST} to a collection). */
  MockResponse create(RecordedRequest request, ApiPath path, UserInfo user) {
    boolean pod = isCore(path, "pods");
    ValidatingPolicies policies = policies();
    if (!pod && policies.isEmpty()) {
      return crud.dispatch(request);
    }
    JsonNode object = JSON.readTree(body(request));
    if (!(object instanceof ObjectNode created)) {
      return crud.dispatch(request);
    }
    if (!path.namespace().isEmpty()) {
      created.withObject("metadata").put("namespace", path.namespace());
    }
    AdmissionWebhookCaller caller = webhooks.get();
    if (pod) {
      // the mutating phase: the deployment's webhook configuration and the stand-ins' by name, as the API server orders them
      List<PodAdmission> before = new ArrayList<>();
      List<PodAdmission> after = new ArrayList<>();
      for (PodAdmission admission : inProcess) {
        (caller == null || admission.name().compareTo(caller.name()) < 0 ? before : after).add(admission);
      }
      for (PodAdmission admission : before) {
        PodAdmission.Result result = admission.mutate(object, user);
        if (result.denial().isPresent()) {
          return denial(admission, result.denial().get());
        }
        object = result.pod();
      }
      if (caller != null) {
        AdmissionWebhookCaller.Outcome outcome = caller.admitCreate(object, namespaceLabels(path.namespace()), user);
        if (!outcome.allowed()) {
          return Statuses.of(400, "BadRequest", outcome.message());
        }
        object = outcome.pod();
      }
      for (PodAdmission admission : after) {
        PodAdmission.Result result = admission.mutate(object, user);
        if (result.denial().isPresent()) {
          return denial(admission, result.denial().get());
        }
        object = result.pod();
      }
      // the validating phase, on the pod every mutation has seen
      for (PodAdmission admission : inProcess) {
        Optional<String> denied = admission.validate(object, user);
        if (denied.isPresent()) {
          return denial(admission, denied.get());
        }
      }
    }
    Optional<MockResponse> denied = admit(policies, AdmissionAttributes.CREATE, path, user, object, null);
    if (denied.isPresent()) {
      return denied.get();
    }
    return crud.handleCreate(Requests.of(HttpMethod.POST, request.getPath(), JSON.writeValueAsString(object)));
  }

  private static MockResponse denial(PodAdmission admission, String message) {
    return Statuses.of(400, "BadRequest", "admission webhook \"" + admission.name() + "\" denied the request: " + message);
  }

  /** A replacement ({@code PUT}) of an object or of its status. */
  MockResponse update(RecordedRequest request, ApiPath path, UserInfo user) {
    ValidatingPolicies policies = policies();
    if (path.subresource().isEmpty() && policies.isEmpty() || !path.subresource().isEmpty() && !path.subresource().equals("status")) {
      return crud.dispatch(request);
    }
    JsonNode written;
    try {
      written = JSON.readTree(body(request));
    } catch (JacksonException e) {
      return Statuses.of(400, "BadRequest", "the request body is not JSON: " + e.getOriginalMessage());
    }
    return change(path, user, policies, current -> written);
  }

  /** A patch of an object or of its status: JSON, merge or strategic merge ({@link ObjectPatch}). */
  MockResponse patch(RecordedRequest request, ApiPath path, UserInfo user) {
    if (!path.subresource().isEmpty() && !path.subresource().equals("status")) {
      return crud.dispatch(request);
    }
    JsonNode patch;
    try {
      patch = JSON.readTree(body(request));
    } catch (JacksonException e) {
      return Statuses.of(400, "BadRequest", "the patch is not JSON: " + e.getOriginalMessage());
    }
    String contentType = request.getHeader("Content-Type");
    return change(path, user, policies(), current -> ObjectPatch.apply(current, contentType, patch));
  }

  /** An update: the object it would store, admitted, then stored; under the store's write lock. */
  private MockResponse change(ApiPath path, UserInfo user, ValidatingPolicies policies, Function<JsonNode, JsonNode> write) {
    return crud.atomically(() -> {
      MockResponse stored = crud.handleGet(path.objectPath());
      if (stored.code() != 200) {
        return Statuses.of(404, "NotFound", path.qualifiedResource() + " \"" + path.name() + "\" not found");
      }
      JsonNode current = JSON.readTree(stored.getBody().getBytes());
      JsonNode written;
      try {
        written = write.apply(current);
      } catch (ObjectPatch.PatchException e) {
        return Statuses.of(e.code(), e.code() == 415 ? "UnsupportedMediaType" : e.code() == 400 ? "BadRequest" : "Invalid", e.getMessage());
      }
      if (!written.isObject()) {
        return Statuses.of(400, "BadRequest", "the written " + path.qualifiedResource() + " is not an object");
      }
      JsonNode object = path.subresource().equals("status") ? StatusSubresource.afterWrite(path, current, written) : written;
      Optional<MockResponse> denied = admit(policies, AdmissionAttributes.UPDATE, path, user, object, current);
      if (denied.isPresent()) {
        return denied.get();
      }
      return crud.handleUpdate(Requests.of(HttpMethod.PUT, path.objectPath(), JSON.writeValueAsString(object)));
    });
  }

  /** A delete of one object or of a collection (each of its objects admitted). */
  MockResponse delete(RecordedRequest request, ApiPath path, UserInfo user) {
    ValidatingPolicies policies = policies();
    if (policies.isEmpty() || !path.subresource().isEmpty()) {
      return crud.dispatch(request);
    }
    return crud.atomically(() -> {
      MockResponse stored = crud.handleGet(path.name().isEmpty() ? request.getPath() : path.objectPath());
      if (stored.code() == 200) {
        JsonNode found = JSON.readTree(stored.getBody().getBytes());
        List<JsonNode> objects = new ArrayList<>();
        if (path.name().isEmpty()) {
          found.path("items").forEach(objects::add);
        } else {
          objects.add(found);
        }
        for (JsonNode old : objects) {
          ApiPath one = new ApiPath(path.group(), path.version(), path.namespace(), path.resource(), old.path("metadata").path("name").asString(""), "");
          Optional<MockResponse> denied = admit(policies, AdmissionAttributes.DELETE, one, user, null, old);
          if (denied.isPresent()) {
            return denied.get();
          }
        }
      }
      return crud.dispatch(request);
    });
  }

  /**
   * Admits a write that is not stored as the object it writes (a Binding): the policies only.
   *
   * @return the API server's answer when a policy denies it
   */
  Optional<MockResponse> admitBinding(ApiPath path, UserInfo user, JsonNode binding) {
    return admit(policies(), AdmissionAttributes.CREATE, path, user, binding, null);
  }

  private Optional<MockResponse> admit(ValidatingPolicies policies, String operation, ApiPath path, UserInfo user, @Nullable JsonNode object, @Nullable JsonNode oldObject) {
    if (policies.isEmpty()) {
      return Optional.empty();
    }
    JsonNode typed = object != null ? object : oldObject;
    String kind = typed == null ? "" : typed.path("kind").asString("");
    String apiVersion = typed == null ? "" : typed.path("apiVersion").asString("");
    Map<String, @Nullable JsonNode> namespaces = new HashMap<>();
    AdmissionAttributes attributes = new AdmissionAttributes(operation, path, kind, apiVersion, user, object, oldObject, ns -> namespaces.computeIfAbsent(ns, this::namespace));
    return policies.validate(attributes).map(d -> Statuses.denied(d, path, attributes.name()));
  }

  private @Nullable JsonNode namespace(String name) {
    MockResponse response = crud.handleGet("/api/v1/namespaces/" + name);
    return response.code() == 200 ? JSON.readTree(response.getBody().getBytes()) : null;
  }

  private Map<String, String> namespaceLabels(String namespace) {
    return AdmissionAttributes.labels(namespace(namespace));
  }

  private static boolean isCore(ApiPath path, String resource) {
    return path.group().isEmpty() && path.resource().equals(resource);
  }

  private static String body(RecordedRequest request) {
    return request.getBody() == null ? "" : new String(request.getBody().getBytes(), StandardCharsets.UTF_8);
  }

  /** Requests to the store, as a client would send them. */
  static final class Requests {
    private Requests() {}

    static RecordedRequest of(HttpMethod method, String path, String body) {
      Headers headers = Headers.builder().add("Content-Type", "application/json").build();
      return new RecordedRequest("HTTP/1.1", method, path, headers, new Buffer(body.getBytes(StandardCharsets.UTF_8)));
    }
  }
}
