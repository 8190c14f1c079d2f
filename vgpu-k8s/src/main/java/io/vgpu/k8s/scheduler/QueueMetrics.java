package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.vgpu.api.PodRef;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.queue.QueueAllocation;
import io.vgpu.core.queue.QueueDemand;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceDivision;
import io.vgpu.k8s.kai.KaiDialect;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.pod.PodCpu;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Each KAI queue's share of the cluster on the scheduler's {@code /metrics} ({@code --kai-dialect}), as
 * KAI's proportion plugin divides it, computed at scrape time (never per filter): {@code
 * vgpu_queue_deserved}, {@code vgpu_queue_fair_share}, {@code vgpu_queue_allocated}, {@code
 * vgpu_queue_requested} and {@code vgpu_queue_limit} (absent for a queue without a limit), labelled
 * {@code queue} and {@code resource} ({@code gpu} in cards, {@code cpu} in millicores, {@code memory} in MB
 * of 10^6 bytes, KAI's units).
 *
 * <p>What is divided: the cards the engine has registered, and the CPU and memory the nodes' status
 * makes allocatable. Allocated is what the engine charges each queue (a fraction at KAI's portion);
 * requested adds the pods of the dialect still waiting, as KAI counts a pending pod: whole cards, a
 * {@code gpu-fraction} at {@code round(f × 100) / 100} of a card, a {@code gpu-memory} at its MiB over the
 * smallest card's (floored to 100 MiB), unrounded, times {@code gpu-fraction-num-devices}, and the pod's
 * CPU request. Host memory is not tracked by the engine: a queue's memory allocated and requested read 0.
 * Queues whose parent is missing or in a cycle are left out of the division (their pods wait), and so are
 * queues deleted while pods still hold grants in them.
 */
final class QueueMetrics implements MultiCollector {
  private static final double MB = 1_000_000.0;

  private final Engine engine;
  private final Supplier<List<Pod>> pods;
  private final Supplier<List<Node>> nodes;
  private final Predicate<Pod> speaks;
  private final Function<Pod, String> queueOf;

  /**
   * The collector.
   *
   * @param pods every pod the scheduler caches
   * @param nodes every node it caches
   * @param speaks which pods speak KAI's dialect
   * @param queueOf the queue of such a pod
   */
  QueueMetrics(Engine engine, Supplier<List<Pod>> pods, Supplier<List<Node>> nodes, Predicate<Pod> speaks, Function<Pod, String> queueOf) {
    this.engine = engine;
    this.pods = pods;
    this.nodes = nodes;
    this.speaks = speaks;
    this.queueOf = queueOf;
  }

  @Override
  public MetricSnapshots collect() {
    List<QueueSpec> specs = divisible(engine.queues());
    Set<String> names = new HashSet<>();
    specs.forEach(q -> names.add(q.name()));
    Map<String, double[]> requested = new LinkedHashMap<>();
    Map<String, double[]> allocated = new LinkedHashMap<>();
    for (QueueAllocation a : engine.queueAllocations()) {
      if (names.contains(a.queue())) {
        double[] held = {a.gpuHundredths() / 100.0, a.cpuMilli(), 0};
        allocated.put(a.queue(), held);
        requested.put(a.queue(), held.clone());
      }
    }
    int smallestCard = KaiDialect.smallestCardMiB(engine.usage());
    for (Pod pod : pods.get()) {
      if (!waiting(pod) || !speaks.test(pod)) {
        continue;
      }
      String queue = queueOf.apply(pod);
      if (!names.contains(queue)) {
        continue;
      }
      double[] asked = requested.computeIfAbsent(queue, q -> new double[3]);
      asked[0] += KaiGpuRequest.of(pod).pendingCards(smallestCard);
      try {
        asked[1] += PodCpu.requestMilli(pod);
      } catch (PodRequestException e) {
        // a pod whose CPU cannot be read is refused at its filter; it asks for nothing here
      }
    }
    Map<String, QueueDemand> demands = new LinkedHashMap<>();
    requested.forEach((queue, asked) -> {
      double[] held = allocated.getOrDefault(queue, new double[3]);
      demands.put(queue, new QueueDemand(byResource(asked), byResource(held)));
    });
    Map<String, Map<QueueResource, QueueShare>> shares = ResourceDivision.divide(specs, demands, totals());
    Map<String, GaugeSnapshot.Builder> families = new LinkedHashMap<>();
    families.put("deserved", GaugeSnapshot.builder().name("vgpu_queue_deserved").help("A KAI queue's deserved quota as resolved (-1 becomes the amount divided)"));
    families.put("fairShare", GaugeSnapshot.builder().name("vgpu_queue_fair_share").help("A KAI queue's fair share, as KAI's proportion plugin divides the cluster"));
    families.put("allocated", GaugeSnapshot.builder().name("vgpu_queue_allocated").help("What the pods charged to a KAI queue hold"));
    families.put("requested", GaugeSnapshot.builder().name("vgpu_queue_requested").help("What a KAI queue's pods hold and ask for, capped by its limit"));
    families.put("limit", GaugeSnapshot.builder().name("vgpu_queue_limit").help("A KAI queue's limit (absent: none)"));
    shares.forEach((queue, byResource) -> byResource.forEach((resource, share) -> {
      Labels labels = Labels.of("queue", queue, "resource", resource.key());
      point(families.get("deserved"), labels, share.deserved());
      point(families.get("fairShare"), labels, share.fairShare());
      point(families.get("allocated"), labels, share.allocated());
      point(families.get("requested"), labels, share.requested());
      if (!share.unlimited()) {
        point(families.get("limit"), labels, share.maxAllowed());
      }
    }));
    List<MetricSnapshot> out = new ArrayList<>();
    families.values().forEach(f -> out.add(f.build()));
    return new MetricSnapshots(out);
  }

  private static void point(GaugeSnapshot.Builder family, Labels labels, double value) {
    family.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(value).build());
  }

  private static Map<QueueResource, Double> byResource(double[] amounts) {
    Map<QueueResource, Double> out = new EnumMap<>(QueueResource.class);
    out.put(QueueResource.GPU, amounts[0]);
    out.put(QueueResource.CPU, amounts[1]);
    out.put(QueueResource.MEMORY, amounts[2]);
    return out;
  }

  /** The queues whose chain of parents is whole: every parent exists and none repeats. */
  private static List<QueueSpec> divisible(List<QueueSpec> queues) {
    Map<String, QueueSpec> byName = new LinkedHashMap<>();
    queues.forEach(q -> byName.put(q.name(), q));
    List<QueueSpec> out = new ArrayList<>();
    for (QueueSpec q : queues) {
      Set<String> seen = new HashSet<>();
      seen.add(q.name());
      boolean whole = true;
      for (Optional<String> parent = q.parent(); parent.isPresent(); ) {
        QueueSpec p = byName.get(parent.get());
        if (p == null || !seen.add(p.name())) {
          whole = false;
          break;
        }
        parent = p.parent();
      }
      if (whole) {
        out.add(q);
      }
    }
    return out;
  }

  /** Not placed yet and not on its way out: a pod KAI counts as pending. */
  private boolean waiting(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    boolean bound = pod.getSpec() != null && pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty();
    PodRef ref = PodRefs.of(pod);
    return !bound && pod.getMetadata().getDeletionTimestamp() == null && !"Succeeded".equals(phase) && !"Failed".equals(phase) && engine.grant(ref).isEmpty();
  }

  /** The cards registered, and the nodes' allocatable CPU (millicores) and memory (MB). */
  private Map<QueueResource, Double> totals() {
    double cards = 0;
    for (NodeUsage node : engine.usage()) {
      cards += node.devices().size();
    }
    double cpu = 0;
    double memory = 0;
    for (Node node : nodes.get()) {
      Map<String, Quantity> allocatable = node.getStatus() == null ? null : node.getStatus().getAllocatable();
      if (allocatable == null) {
        continue;
      }
      cpu += amount(allocatable.get("cpu")).multiply(BigDecimal.valueOf(1000)).doubleValue();
      memory += amount(allocatable.get("memory")).doubleValue() / MB;
    }
    Map<QueueResource, Double> out = new EnumMap<>(QueueResource.class);
    out.put(QueueResource.GPU, cards);
    out.put(QueueResource.CPU, cpu);
    out.put(QueueResource.MEMORY, memory);
    return out;
  }

  private static BigDecimal amount(Quantity quantity) {
    if (quantity == null) {
      return BigDecimal.ZERO;
    }
    try {
      return Quantity.getAmountInBytes(quantity);
    } catch (IllegalArgumentException | ArithmeticException e) {
      return BigDecimal.ZERO;
    }
  }
}
