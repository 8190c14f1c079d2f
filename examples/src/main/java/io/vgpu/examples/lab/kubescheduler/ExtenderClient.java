package io.vgpu.examples.lab.kubescheduler;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * kube-scheduler's HTTP client of a scheduler extender: {@code ExtenderArgs} to the filter verb (node
 * names only in node-cache mode) and {@code ExtenderBindingArgs} to the bind verb, with the field names
 * kube-scheduler's Go types give them.
 */
final class ExtenderClient {
  private static final JsonMapper JSON = PodJson.mapper();

  private final KubeSchedulerConfig.Extender config;
  private final URI base;
  private final HttpClient http;

  /**
   * The answer of a filter call.
   *
   * @param nodeNames the nodes the pod fits
   * @param failedNodes why it does not fit the others
   * @param error the extender's error, empty when none
   */
  record Filtered(List<String> nodeNames, Map<String, String> failedNodes, String error) {}

  /**
   * A client.
   *
   * @param base where the extender is reached in the lab (the urlPrefix's place)
   */
  ExtenderClient(KubeSchedulerConfig.Extender config, URI base, SSLContext tls) {
    this.config = config;
    this.base = base;
    this.http = HttpClient.newBuilder().sslContext(tls).version(HttpClient.Version.HTTP_1_1).connectTimeout(config.timeout()).build();
  }

  Filtered filter(Pod pod, List<String> nodeNames) throws IOException, InterruptedException {
    ObjectNode args = JSON.createObjectNode();
    args.set("Pod", PodJson.toTree(pod));
    if (config.nodeCacheCapable()) {
      args.putNull("Nodes");
      ArrayNode names = args.putArray("NodeNames");
      nodeNames.forEach(names::add);
    } else {
      throw new IllegalStateException("the lab's kube-scheduler sends node names only (nodeCacheCapable: true)");
    }
    JsonNode result = post(config.filterVerb(), args);
    List<String> fits = new ArrayList<>();
    result.path("NodeNames").forEach(n -> fits.add(n.asString()));
    Map<String, String> failed = new LinkedHashMap<>();
    result.path("FailedNodes").properties().forEach(e -> failed.put(e.getKey(), e.getValue().asString("")));
    result.path("FailedAndUnresolvableNodes").properties().forEach(e -> failed.put(e.getKey(), e.getValue().asString("")));
    return new Filtered(fits, failed, result.path("Error").asString(""));
  }

  /** Binds; returns the extender's error, empty on success. */
  String bind(Pod pod, String node) throws IOException, InterruptedException {
    ObjectNode args = JSON.createObjectNode();
    args.put("PodName", pod.getMetadata().getName());
    args.put("PodNamespace", pod.getMetadata().getNamespace());
    args.put("PodUID", pod.getMetadata().getUid());
    args.put("Node", node);
    return post(config.bindVerb(), args).path("Error").asString("");
  }

  private JsonNode post(String verb, JsonNode body) throws IOException, InterruptedException {
    String prefix = base.toString().endsWith("/") ? base.toString() : base + "/";
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(prefix + verb))
            .timeout(config.timeout())
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
            .build();
    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (response.statusCode() != 200) {
      throw new IOException("extender " + verb + " answered HTTP " + response.statusCode() + ": " + response.body().lines().findFirst().orElse(""));
    }
    return JSON.readTree(response.body());
  }
}
