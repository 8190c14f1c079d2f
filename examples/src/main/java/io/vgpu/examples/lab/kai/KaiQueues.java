package io.vgpu.examples.lab.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * SCENARIO.md's {@code queues[]}: per queue and resource what KAI's proportion plugin would report as
 * deserved, requested, allocated and maxAllowed (kai.md §4), read from the API objects — a pod with a
 * live BindRequest counts its accepted portion as allocated (KAI counts Binding as allocated), a pending
 * pod its request (a memory pod its unrounded {@code MiB / smallest card}). Values roll up to every
 * ancestor. GPU in cards, CPU in millicores, memory in MB. Fair share is not computed here.
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
    Map<String, JsonNode> byName = new LinkedHashMap<>();
    queues.forEach(q -> byName.put(q.path("metadata").path("name").asString(""), q));
    Map<String, double[]> requested = new HashMap<>();
    Map<String, double[]> allocated = new HashMap<>();
    Map<PodRef, JsonNode> bindOf = KaiStandIn.bindsByPod(binds);
    double minMiB = minNodeMiB(nodes);
    for (Pod pod : pods) {
      if (!KaiStandIn.kaiPod(pod) || KaiStandIn.terminal(pod)) {
        continue;
      }
      JsonNode bind = bindOf.get(PodRefs.of(pod));
      boolean accepted = bind != null && !bind.path("status").path("phase").asString("").equals("Failed");
      KaiGpuRequest request = KaiGpuRequest.of(pod);
      double gpu = accepted ? acceptedGpus(bind) : pendingGpus(request, minMiB);
      double[] v = {gpu, cpuMillis(pod), memoryMB(pod)};
      // the pod's queue and every ancestor
      String queue = KaiStandIn.queueOf(pod);
      for (int depth = 0; queue != null && !queue.isEmpty() && byName.containsKey(queue) && depth < 64; depth++) {
        add(requested, queue, v);
        if (accepted) {
          add(allocated, queue, v);
        }
        queue = byName.get(queue).path("spec").path("parentQueue").asString("");
      }
    }
    double[] total = {0, 0, 0};
    for (Node n : nodes) {
      total[0] += KaiStandIn.cards(n);
      total[1] += allocatable(n, "cpu").multiply(BigDecimal.valueOf(1000)).doubleValue();
      total[2] += allocatable(n, "memory").doubleValue() / 1e6;
    }
    ArrayNode out = PodJson.mapper().createArrayNode();
    byName.forEach((name, q) -> {
      ObjectNode entry = out.addObject();
      entry.put("name", name);
      String parent = q.path("spec").path("parentQueue").asString("");
      if (parent.isEmpty()) {
        entry.putNull("parent");
      } else {
        entry.put("parent", parent);
      }
      for (int r = 0; r < RESOURCES.length; r++) {
        JsonNode spec = q.path("spec").path("resources").path(RESOURCES[r]);
        double quota = spec.path("quota").isNumber() ? spec.path("quota").asDouble() : 0;
        double limit = spec.path("limit").isNumber() ? spec.path("limit").asDouble() : 0;
        double req = requested.getOrDefault(name, new double[3])[r];
        double requestable = limit < 0 ? req : Math.min(limit, req);
        double deserved = quota < 0 ? Math.min(total[r], requestable) : quota;
        ObjectNode res = entry.putObject(RESOURCES[r]);
        res.put("deserved", round(deserved));
        res.put("requested", round(req));
        res.put("allocated", round(allocated.getOrDefault(name, new double[3])[r]));
        if (limit < 0) {
          res.putNull("maxAllowed");
        } else {
          res.put("maxAllowed", round(limit));
        }
      }
    });
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

  /** A JSON number rounded to two decimals. */
  static double round(double v) {
    return BigDecimal.valueOf(v).setScale(2, RoundingMode.HALF_UP).doubleValue();
  }

  /** A number as text: no decimals when whole. */
  static String number(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }

}
