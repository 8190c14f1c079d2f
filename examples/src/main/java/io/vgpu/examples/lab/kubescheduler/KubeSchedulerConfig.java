package io.vgpu.examples.lab.kubescheduler;

import io.vgpu.k8s.cli.GoDuration;
import io.vgpu.k8s.cli.UnavailableException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * What the lab's kube-scheduler takes from a {@code KubeSchedulerConfiguration}: the profiles' scheduler
 * names, the extender (URL, verbs, node-cache mode, managed resources, timeout, TLS files), and the
 * leader election Lease, and how many feasible nodes it looks for ({@code percentageOfNodesToScore}).
 *
 * @param schedulerNames the profiles' scheduler names
 * @param extender the extender
 * @param leaseNamespace the leader election Lease's namespace
 * @param leaseName the leader election Lease's name
 * @param percentageOfNodesToScore each profile's {@code percentageOfNodesToScore} by scheduler name, else
 *     the configuration's; 0 where neither sets one (kube-scheduler's adaptive share)
 */
public record KubeSchedulerConfig(Set<String> schedulerNames, Extender extender, String leaseNamespace, String leaseName, Map<String, Integer> percentageOfNodesToScore) {
  /** Copies the map. */
  public KubeSchedulerConfig {
    percentageOfNodesToScore = Map.copyOf(percentageOfNodesToScore);
  }

  /** The percentage of nodes to score for pods of a scheduler name: 0 when none is set. */
  public int percentageOfNodesToScore(String schedulerName) {
    return percentageOfNodesToScore.getOrDefault(schedulerName, 0);
  }

  /**
   * The extender as configured.
   *
   * @param urlPrefix where kube-scheduler calls it
   * @param filterVerb the filter path under the prefix
   * @param bindVerb the bind path under the prefix
   * @param nodeCacheCapable whether it gets node names instead of node objects
   * @param managedResources the resources that make a pod interesting to the extender
   * @param timeout the HTTP timeout
   * @param certFile kube-scheduler's client certificate, if any (a path in kube-scheduler's container)
   * @param keyFile its key
   * @param caFile the CA kube-scheduler verifies the extender with
   */
  public record Extender(
      URI urlPrefix,
      String filterVerb,
      String bindVerb,
      boolean nodeCacheCapable,
      Set<String> managedResources,
      Duration timeout,
      String certFile,
      String keyFile,
      String caFile) {}

  /**
   * Reads the configuration.
   *
   * @throws UnavailableException when it has no extender or no profile (the lab needs both)
   */
  public static KubeSchedulerConfig of(JsonNode configuration) {
    Set<String> names = new LinkedHashSet<>();
    Map<String, Integer> percentages = new LinkedHashMap<>();
    int global = percentage(configuration, "the configuration");
    configuration.path("profiles").forEach(p -> {
      String name = p.path("schedulerName").asString("default-scheduler");
      names.add(name);
      int own = percentage(p, "profile " + name);
      percentages.put(name, own != 0 ? own : global);
    });
    if (names.isEmpty()) {
      names.add("default-scheduler");
      percentages.put("default-scheduler", global);
    }
    JsonNode extenders = configuration.path("extenders");
    if (extenders.size() != 1) {
      throw new UnavailableException("the reference deployment's KubeSchedulerConfiguration must have exactly one extender (it has " + extenders.size() + ")");
    }
    JsonNode e = extenders.get(0);
    Set<String> managed = new LinkedHashSet<>();
    e.path("managedResources").forEach(r -> managed.add(r.path("name").asString("")));
    List<String> missing = new ArrayList<>();
    for (String key : List.of("urlPrefix", "filterVerb", "bindVerb")) {
      if (e.path(key).asString("").isEmpty()) {
        missing.add(key);
      }
    }
    if (!missing.isEmpty()) {
      throw new UnavailableException("the reference deployment's extender lacks " + String.join(", ", missing));
    }
    JsonNode tls = e.path("tlsConfig");
    Extender extender =
        new Extender(
            URI.create(e.path("urlPrefix").asString()),
            e.path("filterVerb").asString(),
            e.path("bindVerb").asString(),
            e.path("nodeCacheCapable").asBoolean(false),
            managed,
            e.has("httpTimeout") ? GoDuration.parse(e.path("httpTimeout").asString("30s")) : Duration.ofSeconds(30),
            tls.path("certFile").asString(""),
            tls.path("keyFile").asString(""),
            tls.path("caFile").asString(""));
    JsonNode election = configuration.path("leaderElection");
    return new KubeSchedulerConfig(
        names, extender, election.path("resourceNamespace").asString("kube-system"), election.path("resourceName").asString("kube-scheduler"), percentages);
  }

  /** A {@code percentageOfNodesToScore} as kube-scheduler validates it: 0 to 100; absent is 0. */
  private static int percentage(JsonNode node, String where) {
    JsonNode value = node.path("percentageOfNodesToScore");
    if (value.isMissingNode() || value.isNull()) {
      return 0;
    }
    if (!value.isIntegralNumber() || value.asInt() < 0 || value.asInt() > 100) {
      throw new UnavailableException(where + ": percentageOfNodesToScore " + value + " is not an integer from 0 to 100");
    }
    return value.asInt();
  }
}
