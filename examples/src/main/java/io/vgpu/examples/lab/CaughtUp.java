package io.vgpu.examples.lab;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.examples.lab.report.PrometheusText;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.pod.PodRefs;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import tools.jackson.databind.JsonNode;

/**
 * Whether {@code vgpu scheduler} and the node agents have seen what the API server holds, read from what
 * they export — their metrics — against the API objects: the scheduler counts no grant of a pod that is
 * gone or has ended, holds each card at the memory its node now registers and knows every node that
 * registers healthy cards; a node agent reports no container of a pod that is gone or has ended. The
 * components follow the API server through their own informers, so each of these can lag behind an
 * event the lab has already seen through its own.
 */
final class CaughtUp {
  private static final double MIB = 1024 * 1024;
  private static final String SCHEDULER_GRANTS = "hami_vgpu_memory_allocated_bytes";
  private static final String SCHEDULER_CARDS = "hami_gpu_memory_limit_bytes";
  private static final String AGENT_CONTAINERS = "hami_vgpu_memory_limit_bytes";
  private static final String SCRAPE_ERROR = "scrape_error";

  private CaughtUp() {}

  /**
   * What the lab reads at one moment.
   *
   * @param pods every pod the API server holds
   * @param nodes every node it holds
   * @param countResource the device count resource ({@code nvidia.com/gpu}): a node that advertises none
   *     is one the scheduler withholds
   * @param schedulerNodeLabels the labels a node needs for the scheduler to register it ({@code
   *     --node-label-selector}; empty: any node)
   * @param metrics one scrape of every component, as {@link LabCluster#scrape} gives it ({@code
   *     scheduler}, and {@code nodes} by node name)
   */
  record View(List<Pod> pods, List<Node> nodes, String countResource, Map<String, String> schedulerNodeLabels, JsonNode metrics) {}

  /** What a component has not seen yet, one line each; empty when every component is caught up. */
  static List<String> lagging(View view) {
    List<String> out = new ArrayList<>();
    Map<String, Pod> pods = new HashMap<>();
    view.pods().forEach(p -> pods.put(PodRefs.of(p).toString(), p));
    JsonNode scheduler = view.metrics().path("scheduler");
    if (scheduler.has(SCRAPE_ERROR)) {
      out.add("vgpu scheduler's metrics cannot be read: " + scheduler.path(SCRAPE_ERROR).asString(""));
    } else if (!scheduler.isMissingNode()) { // absent: a scheduler that holds no cards (under KAI Scheduler)
      Set<String> counted = new HashSet<>();
      Map<String, Map<String, Double>> cards = new TreeMap<>();
      for (var sample : scheduler.properties()) {
        String name = PrometheusText.name(sample.getKey());
        Map<String, String> labels = PrometheusText.labels(sample.getKey());
        if (name.equals(SCHEDULER_GRANTS)) {
          counted.add(labels.get("namespace") + "/" + labels.get("pod"));
        } else if (name.equals(SCHEDULER_CARDS)) {
          cards.computeIfAbsent(labels.get("node"), n -> new TreeMap<>()).put(labels.get("device_uuid"), sample.getValue().asDouble());
        }
      }
      counted.stream().sorted().forEach(pod -> ended(pods, pod).ifPresent(why -> out.add("vgpu scheduler still counts the grant of " + pod + " (" + why + ")")));
      for (Node node : view.nodes()) {
        String name = node.getMetadata().getName();
        Map<String, Integer> registered = registeredMiB(node);
        Map<String, Double> held = cards.getOrDefault(name, Map.of());
        held.forEach((uuid, bytes) -> {
          Integer mib = registered.get(uuid);
          if (mib == null) {
            out.add("vgpu scheduler still holds " + uuid + " of node " + name + ", which the node no longer registers");
          } else if (bytes != mib * MIB) {
            out.add("vgpu scheduler holds " + uuid + " of node " + name + " at " + Math.round(bytes / MIB) + " MiB, the node registers " + mib + " MiB");
          }
        });
        if (held.isEmpty() && !registered.isEmpty() && advertises(node, view.countResource()) && carries(node, view.schedulerNodeLabels())) {
          out.add("vgpu scheduler has not registered node " + name + " yet");
        }
      }
      cards.keySet().stream().filter(n -> view.nodes().stream().noneMatch(node -> node.getMetadata().getName().equals(n)))
          .forEach(n -> out.add("vgpu scheduler still holds the cards of node " + n + ", which is gone"));
    }
    for (var agent : view.metrics().path("nodes").properties()) {
      if (agent.getValue().has(SCRAPE_ERROR)) {
        out.add("device-plugin/" + agent.getKey() + "'s metrics cannot be read: " + agent.getValue().path(SCRAPE_ERROR).asString(""));
        continue;
      }
      Set<String> reported = new HashSet<>();
      for (String key : agent.getValue().propertyNames()) {
        if (PrometheusText.name(key).equals(AGENT_CONTAINERS)) {
          Map<String, String> labels = PrometheusText.labels(key);
          reported.add(labels.get("namespace") + "/" + labels.get("pod"));
        }
      }
      reported.stream().sorted().forEach(pod -> ended(pods, pod).ifPresent(why -> out.add("device-plugin/" + agent.getKey() + " still reports " + pod + " (" + why + ")")));
    }
    return out;
  }

  /** Why a pod's grant is over: it is gone, or it has ended. */
  private static Optional<String> ended(Map<String, Pod> pods, String ref) {
    Pod pod = pods.get(ref);
    if (pod == null) {
      return Optional.of("the pod is gone");
    }
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    return "Succeeded".equals(phase) || "Failed".equals(phase) ? Optional.of("the pod has " + phase.toLowerCase(Locale.ROOT)) : Optional.empty();
  }

  /** The node agent's registration on the node: MiB by card UUID; empty when none, or unreadable. */
  static Map<String, Integer> registeredMiB(Node node) {
    Map<String, Integer> out = new TreeMap<>();
    String value = node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
    if (value == null || value.isBlank()) {
      return out;
    }
    try {
      for (SchedulableDevice d : NodeRegisterCodec.decode(value)) {
        out.put(d.uuid(), d.memoryMiB());
      }
    } catch (IllegalArgumentException e) {
      out.clear(); // the scheduler ignores an unreadable registration too
    }
    return out;
  }

  private static boolean advertises(Node node, String countResource) {
    Map<String, Quantity> allocatable = node.getStatus() == null ? null : node.getStatus().getAllocatable();
    Quantity q = allocatable == null ? null : allocatable.get(countResource);
    return q != null && Quantity.getAmountInBytes(q).signum() > 0;
  }

  private static boolean carries(Node node, Map<String, String> labels) {
    Map<String, String> has = node.getMetadata().getLabels() == null ? Map.of() : node.getMetadata().getLabels();
    return labels.entrySet().stream().allMatch(e -> e.getValue().equals(has.get(e.getKey())));
  }

  /**
   * What the components have seen that can make a waiting pod fit, as one string: each node's
   * registration. Grants released are counted by {@link Settling}.
   */
  static String registrations(View view) {
    StringBuilder out = new StringBuilder();
    for (Node node : view.nodes()) {
      out.append(node.getMetadata().getName()).append('=').append(registeredMiB(node)).append(';');
    }
    return out.toString();
  }
}
