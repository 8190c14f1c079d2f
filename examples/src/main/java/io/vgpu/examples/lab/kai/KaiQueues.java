package io.vgpu.examples.lab.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.PodRef;
import io.vgpu.core.queue.QueueDemand;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceDivision;
import io.vgpu.core.queue.ResourceTerms;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.simulate.SimulationResult;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;

/**
 * SCENARIO.md's {@code queues[]}: per queue and resource what KAI's proportion plugin would report as
 * deserved, requested, allocated and maxAllowed (kai.md §4), read from the API objects — a pod with a
 * live BindRequest counts its accepted portion as allocated (KAI counts Binding as allocated), a pending
 * pod its request (a memory pod its unrounded {@code MiB / smallest card}). Values roll up to every
 * ancestor. GPU in cards, CPU in millicores, memory in MB. Deserved and fair share are vgpu-core's
 * {@link ResourceDivision} of the nodes' allocatable among the queues, KAI's algorithm.
 */
public final class KaiQueues {
  private static final String[] RESOURCES = {"gpu", "cpu", "memory"};

  private KaiQueues() {}

  /**
   * The report.
   *
   * @param queues the Queue objects in the scenario's order
   * @param nodes every node
   * @param pods every pod
   * @param binds every BindRequest
   */
  public static ArrayNode report(List<JsonNode> queues, List<Node> nodes, List<Pod> pods, List<JsonNode> binds) {
    List<QueueSpec> specs = new ArrayList<>();
    Set<String> names = new HashSet<>();
    queues.forEach(q -> names.add(q.path("metadata").path("name").asString("")));
    for (JsonNode q : queues) {
      specs.add(spec(q, names));
    }
    Map<String, double[]> requested = new HashMap<>();
    Map<String, double[]> allocated = new HashMap<>();
    Map<PodRef, JsonNode> bindOf = KaiStandIn.bindsByPod(binds);
    double minMiB = minNodeMiB(nodes);
    for (Pod pod : pods) {
      if (!KaiStandIn.kaiPod(pod) || KaiStandIn.terminal(pod)) {
        continue;
      }
      String queue = KaiStandIn.queueOf(pod);
      if (!names.contains(queue)) {
        continue;
      }
      JsonNode bind = bindOf.get(PodRefs.of(pod));
      boolean accepted = bind != null && !bind.path("status").path("phase").asString("").equals("Failed");
      KaiGpuRequest request = KaiGpuRequest.of(pod);
      double gpu = accepted ? acceptedGpus(bind) : pendingGpus(request, minMiB);
      double[] v = {gpu, cpuMillis(pod), memoryMB(pod)};
      add(requested, queue, v);
      if (accepted) {
        add(allocated, queue, v);
      }
    }
    Map<String, QueueDemand> demands = new HashMap<>();
    for (String q : names) {
      if (requested.containsKey(q)) {
        demands.put(q, new QueueDemand(byResource(requested.get(q)), byResource(allocated.getOrDefault(q, new double[3]))));
      }
    }
    double[] total = {0, 0, 0};
    for (Node n : nodes) {
      total[0] += KaiStandIn.cards(n);
      total[1] += allocatable(n, "cpu").multiply(BigDecimal.valueOf(1000)).doubleValue();
      total[2] += allocatable(n, "memory").doubleValue() / 1e6;
    }
    Map<String, Map<QueueResource, QueueShare>> shares = ResourceDivision.divide(specs, demands, byResource(total));
    ArrayNode out = PodJson.mapper().createArrayNode();
    for (QueueSpec spec : specs) {
      out.add(SimulationJson.queue(new SimulationResult.QueueOutcome(spec.name(), spec.parent(), shares.get(spec.name()))));
    }
    return out;
  }

  /** A Queue object as KAI reads it: absent fields 0, priority 100; a parent that does not exist is none. */
  static QueueSpec spec(JsonNode queue, Set<String> names) {
    String name = queue.path("metadata").path("name").asString("");
    String parent = queue.path("spec").path("parentQueue").asString("");
    Map<QueueResource, ResourceTerms> terms = new EnumMap<>(QueueResource.class);
    for (QueueResource r : QueueResource.values()) {
      JsonNode t = queue.path("spec").path("resources").path(r.key());
      if (!t.isMissingNode() && !t.isNull()) {
        terms.put(r, new ResourceTerms(number(t, "quota"), number(t, "limit"), number(t, "overQuotaWeight")));
      }
    }
    JsonNode priority = queue.path("spec").path("priority");
    return new QueueSpec(name, parent.isEmpty() || !names.contains(parent) ? Optional.empty() : Optional.of(parent),
        priority.isNumber() ? priority.asInt() : QueueSpec.DEFAULT_PRIORITY, terms);
  }

  private static double number(JsonNode terms, String field) {
    JsonNode v = terms.path(field);
    return v.isNumber() ? v.asDouble() : 0;
  }

  private static Map<QueueResource, Double> byResource(double[] v) {
    Map<QueueResource, Double> out = new EnumMap<>(QueueResource.class);
    out.put(QueueResource.GPU, v[0]);
    out.put(QueueResource.CPU, v[1]);
    out.put(QueueResource.MEMORY, v[2]);
    return out;
  }

  /** The cards a BindRequest gave: a fraction's portion on each of its cards, or whole cards. */
  static double acceptedGpus(JsonNode bind) {
    JsonNode gpu = bind.path("spec").path("receivedGPU");
    long count = gpu.path("count").asLong(0);
    if (!"Fraction".equals(bind.path("spec").path("receivedResourceType").asString(""))) {
      return count;
    }
    try {
      return Double.parseDouble(gpu.path("portion").asString("0")) * count;
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static double pendingGpus(KaiGpuRequest request, double minMiB) {
    if (request.fraction().isPresent()) {
      return Math.round(request.fraction().getAsDouble() * 100) * request.devices() / 100.0;
    }
    if (request.memoryMiB().isPresent()) {
      return minMiB <= 0 ? 0 : request.devices() * (double) request.memoryMiB().getAsLong() / minMiB;
    }
    return request.wholeCards();
  }

  /** The smallest floored per-card MiB over nodes with a value above 100 ({@code MinNodeGPUMemoryMiB}); 0 when none. */
  static double minNodeMiB(Collection<Node> nodes) {
    long min = 0;
    for (Node n : nodes) {
      long f = KaiStandIn.floored(n);
      if (f > KaiPortion.UNSYNCED_MIB && (min == 0 || f < min)) {
        min = f;
      }
    }
    return min;
  }

  private static double cpuMillis(Pod pod) {
    return requests(pod, "cpu").multiply(BigDecimal.valueOf(1000)).doubleValue();
  }

  private static double memoryMB(Pod pod) {
    return requests(pod, "memory").doubleValue() / 1e6;
  }

  private static BigDecimal requests(Pod pod, String resource) {
    BigDecimal sum = BigDecimal.ZERO;
    for (Container c : pod.getSpec().getContainers()) {
      Quantity q = c.getResources() == null || c.getResources().getRequests() == null ? null : c.getResources().getRequests().get(resource);
      if (q != null) {
        sum = sum.add(Quantity.getAmountInBytes(q));
      }
    }
    return sum;
  }

  private static BigDecimal allocatable(Node node, String resource) {
    Quantity q = node.getStatus() == null || node.getStatus().getAllocatable() == null ? null : node.getStatus().getAllocatable().get(resource);
    return q == null ? BigDecimal.ZERO : Quantity.getAmountInBytes(q);
  }

  private static void add(Map<String, double[]> sums, String queue, double[] v) {
    double[] s = sums.computeIfAbsent(queue, k -> new double[3]);
    for (int i = 0; i < 3; i++) {
      s[i] += v[i];
    }
  }

  /** A number as text: no decimals when whole. */
  static String number(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }

}
