package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * The scheduler's and the device plugin's writes whose answers they never read: a pod's or node's merge
 * patch and a create, sent through the client's own HTTP client (its TLS, credentials and interceptors)
 * with the returned object left undecoded. fabric8's typed calls decode every answer into a full model
 * object, which was about a tenth of the scheduler's CPU per pod at 5,000 nodes, for objects nobody
 * looked at. A refusal throws {@link KubernetesClientException} with the API server's code and message,
 * as fabric8 does.
 */
public final class ApiWrites {
  private static final String MERGE_PATCH = "application/merge-patch+json";
  private static final String JSON = "application/json";

  private final KubernetesClient client;
  private final String base;

  /** Writes through {@code client}'s HTTP client, to its API server. */
  public ApiWrites(KubernetesClient client) {
    this.client = client;
    String master = client.getMasterUrl().toString();
    this.base = master.endsWith("/") ? master.substring(0, master.length() - 1) : master;
  }

  /**
   * JSON merge patch of a pod.
   *
   * @throws KubernetesClientException when the API server refuses it (with its code) or cannot be reached
   */
  public void patchPod(String namespace, String name, String patch) {
    send(client.getHttpClient().newHttpRequestBuilder().uri(base + "/api/v1/namespaces/" + namespace + "/pods/" + name).patch(MERGE_PATCH, patch));
  }

  /** JSON merge patch of a node; a stale {@code resourceVersion} in the patch is refused with 409. */
  void patchNode(String name, String patch) {
    send(client.getHttpClient().newHttpRequestBuilder().uri(base + "/api/v1/nodes/" + name).patch(MERGE_PATCH, patch));
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
    send(client.getHttpClient().newHttpRequestBuilder().uri(base + "/api/v1/namespaces/" + namespace + "/" + plural).post(JSON, json));
  }

  /**
   * As {@link #create(String, String, String)}, without waiting for the answer: the future fails with
   * the {@link KubernetesClientException} that it would throw.
   */
  CompletableFuture<Void> createAsync(String namespace, String plural, String json) {
    return sendAsync(client.getHttpClient().newHttpRequestBuilder().uri(base + "/api/v1/namespaces/" + namespace + "/" + plural).post(JSON, json));
  }

  /**
   * As {@link #patchPod}, without waiting for the answer: the future fails with the {@link
   * KubernetesClientException} that {@link #patchPod} would throw.
   */
  CompletableFuture<Void> patchPodAsync(String namespace, String name, String patch) {
    return sendAsync(client.getHttpClient().newHttpRequestBuilder().uri(base + "/api/v1/namespaces/" + namespace + "/pods/" + name).patch(MERGE_PATCH, patch));
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
          byte[] body = response.body();
          Status status = statusOf(body == null ? null : new String(body, StandardCharsets.UTF_8));
          String message = status != null && status.getMessage() != null ? status.getMessage() : "HTTP " + response.code();
          throw new KubernetesClientException(message, response.code(), status);
        });
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
