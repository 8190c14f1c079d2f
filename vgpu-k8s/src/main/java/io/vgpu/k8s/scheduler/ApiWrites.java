package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The scheduler's and the device plugin's writes whose answers they never read: a pod's or node's merge
 * patch and a create, with the returned object left undecoded. They are sent over {@link
 * ApiConnections}' kept-alive connections on the calling thread (asynchronous ones on its writer
 * threads), with the client's credentials, TLS and interceptors; a client with a proxy sends them through
 * its own HTTP client instead. fabric8's typed calls decode every answer into a full model object, and its
 * HTTP layers and OkHttp's thread hand-offs cost more than the write: together most of the scheduler's
 * CPU per pod at 5,000 nodes, for objects nobody looked at. A refusal throws {@link
 * KubernetesClientException} with the API server's code and message, as fabric8 does.
 */
public final class ApiWrites {
  private static final String MERGE_PATCH = "application/merge-patch+json";
  private static final String JSON = "application/json";

  private final KubernetesClient client;
  private final String base;
  private final @Nullable ApiConnections connections;

  /** Writes to {@code client}'s API server, with its credentials. */
  public ApiWrites(KubernetesClient client) {
    this.client = client;
    String master = client.getMasterUrl().toString();
    this.base = master.endsWith("/") ? master.substring(0, master.length() - 1) : master;
    this.connections = ApiConnections.of(client).orElse(null);
  }

  /**
   * JSON merge patch of a pod.
   *
   * @throws KubernetesClientException when the API server refuses it (with its code) or cannot be reached
   */
  public void patchPod(String namespace, String name, String patch) {
    write("PATCH", podPath(namespace, name), MERGE_PATCH, patch);
  }

  /** JSON merge patch of a node; a stale {@code resourceVersion} in the patch is refused with 409. */
  void patchNode(String name, String patch) {
    write("PATCH", "/api/v1/nodes/" + name, MERGE_PATCH, patch);
  }

  /**
   * Creates a namespaced core object in its collection, e.g. {@code bindings} or {@code events}.
   *
   * @param plural the collection's name
   */
  void create(String namespace, String plural, HasMetadata object) {
    create(namespace, plural, client.getKubernetesSerialization().asJson(object));
  }

  /**
   * Creates a namespaced core object from its JSON, written by the caller (an Event, a Binding: the
   * model's bean serialization was most of what writing one cost).
   *
   * @param plural the collection's name
   */
  void create(String namespace, String plural, String json) {
    write("POST", collectionPath(namespace, plural), JSON, json);
  }

  /**
   * As {@link #create(String, String, String)}, without waiting for the answer: the future fails with
   * the {@link KubernetesClientException} that it would throw.
   */
  CompletableFuture<Void> createAsync(String namespace, String plural, String json) {
    return writeAsync("POST", collectionPath(namespace, plural), JSON, json);
  }

  /**
   * As {@link #patchPod}, without waiting for the answer: the future fails with the {@link
   * KubernetesClientException} that {@link #patchPod} would throw.
   */
  CompletableFuture<Void> patchPodAsync(String namespace, String name, String patch) {
    return writeAsync("PATCH", podPath(namespace, name), MERGE_PATCH, patch);
  }

  private static String podPath(String namespace, String name) {
    return collectionPath(namespace, "pods") + "/" + name;
  }

  private static String collectionPath(String namespace, String plural) {
    return "/api/v1/namespaces/" + namespace + "/" + plural;
  }

  private void write(String method, String path, String contentType, String body) {
    if (connections == null) {
      send(client.getHttpClient().newHttpRequestBuilder().uri(base + path).method(method, contentType, body));
      return;
    }
    ApiConnections.Answer answer;
    try {
      answer = connections.send(method, path, contentType, body.getBytes(StandardCharsets.UTF_8));
    } catch (SocketTimeoutException e) {
      throw new KubernetesClientException("the API server did not answer within " + client.getConfiguration().getRequestTimeout() + " ms", e);
    } catch (IOException e) {
      throw new KubernetesClientException("writing to the API server failed: " + e.getMessage(), e);
    }
    if (answer.code() < 200 || answer.code() >= 300) {
      throw refusal(answer.code(), answer.body());
    }
  }

  private CompletableFuture<Void> writeAsync(String method, String path, String contentType, String body) {
    if (connections == null) {
      return sendAsync(client.getHttpClient().newHttpRequestBuilder().uri(base + path).method(method, contentType, body));
    }
    return CompletableFuture.runAsync(() -> write(method, path, contentType, body), connections.writers());
  }

  private void send(HttpRequest.Builder request) {
    try {
      sendAsync(request).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KubernetesClientException("interrupted while writing to the API server", e);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof KubernetesClientException k ? k : new KubernetesClientException("writing to the API server failed: " + e.getCause().getMessage(), e.getCause());
    }
  }

  private CompletableFuture<Void> sendAsync(HttpRequest.Builder request) {
    long timeout = client.getConfiguration().getRequestTimeout();
    // Bytes, made text only for a refusal: a success's body (the object written) is never read.
    CompletableFuture<HttpResponse<byte[]>> sent = client.getHttpClient().sendAsync(request.build(), byte[].class);
    if (timeout > 0) {
      sent = Timeouts.orTimeout(sent, timeout, TimeUnit.MILLISECONDS);
    }
    return sent.handle(
        (response, e) -> {
          if (e != null) {
            Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
            throw cause instanceof TimeoutException
                ? new KubernetesClientException("the API server did not answer within " + timeout + " ms", cause)
                : new KubernetesClientException("writing to the API server failed: " + cause.getMessage(), cause);
          }
          if (response.code() >= 200 && response.code() < 300) {
            return null;
          }
          throw refusal(response.code(), response.body());
        });
  }

  /** The API server's refusal with its code and, when its body is a Status, its message. */
  private KubernetesClientException refusal(int code, byte @Nullable [] body) {
    Status status = statusOf(body == null ? null : new String(body, StandardCharsets.UTF_8));
    String message = status != null && status.getMessage() != null ? status.getMessage() : "HTTP " + code;
    return new KubernetesClientException(message, code, status);
  }

  private @Nullable Status statusOf(@Nullable String body) {
    if (body == null || body.isEmpty()) {
      return null;
    }
    try {
      return client.getKubernetesSerialization().unmarshal(body, Status.class);
    } catch (RuntimeException e) {
      return null;
    }
  }
}
