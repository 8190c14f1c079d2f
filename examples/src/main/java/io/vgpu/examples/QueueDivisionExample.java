package io.vgpu.examples;

import io.vgpu.core.queue.QueueDemand;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceDivision;
import io.vgpu.core.queue.ResourceTerms;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * KAI Scheduler's queues and fair share embedded in another scheduler, without Kubernetes. An embedding
 * scheduler keeps its own queues (a tree whose leaves hold its jobs) and, in every scheduling cycle, sums
 * what each leaf's pods ask for and hold, divides the cluster among the queues with {@link
 * ResourceDivision#divide}, and then acts on the shares as KAI does: it refuses a pod that would take a
 * queue past its {@code maxAllowed}, and lets a queue reclaim from others only while its {@code
 * allocated} plus the pod's request stays within its {@code fairShare}.
 *
 * <p>Here 16 GPUs are divided between a research department (two teams) and an inference queue of
 * higher priority whose limit is below what it asks for.
 */
public final class QueueDivisionExample {
  /** The GPUs of the cluster: two nodes of 8. */
  static final double CLUSTER_GPUS = 16;

  private QueueDivisionExample() {}

  /** Divides the cluster's GPUs and prints each queue's share. */
  public static void main(String[] args) {
    List<QueueSpec> queues =
        List.of(
            // The department: 8 GPUs deserved, no limit; its teams divide whatever it is given.
            queue("research", null, 100, 8, ResourceTerms.UNLIMITED, 1),
            queue("vision", "research", 100, 4, ResourceTerms.UNLIMITED, 3),
            queue("language", "research", 100, 1, 6, 1),
            // Served first over quota (priority 200), but never past 4 GPUs.
            queue("inference", null, 200, 2, 4, 1));
    Map<String, QueueDemand> demands = new LinkedHashMap<>();
    demands.put("vision", gpus(10, 6));
    demands.put("language", gpus(7, 3));
    demands.put("inference", gpus(5, 4));

    Map<String, Map<QueueResource, QueueShare>> division = ResourceDivision.divide(queues, demands, Map.of(QueueResource.GPU, CLUSTER_GPUS));

    System.out.println(fmt(CLUSTER_GPUS) + " GPUs divided among " + queues.size() + " queues");
    System.out.printf(Locale.ROOT, "%-12s %9s %10s %10s %10s %11s%n", "queue", "deserved", "requested", "allocated", "fairShare", "maxAllowed");
    for (QueueSpec q : queues) {
      QueueShare s = division.get(q.name()).get(QueueResource.GPU);
      String name = (q.parent().isPresent() ? "  " : "") + q.name();
      System.out.printf(
          Locale.ROOT,
          "%-12s %9s %10s %10s %10s %11s%n",
          name,
          fmt(s.deserved()),
          fmt(s.requested()),
          fmt(s.allocated()),
          fmt(s.fairShare()),
          s.unlimited() ? "unlimited" : fmt(s.maxAllowed()));
    }
  }

  /** A queue with terms for GPUs only; CPU and memory are left out of this example. */
  private static QueueSpec queue(String name, String parent, int priority, double quota, double limit, double overQuotaWeight) {
    return new QueueSpec(name, Optional.ofNullable(parent), priority, Map.of(QueueResource.GPU, new ResourceTerms(quota, limit, overQuotaWeight)));
  }

  /** A leaf's pods: what they ask for in all (held and pending) and what they hold. */
  private static QueueDemand gpus(double requested, double allocated) {
    return new QueueDemand(Map.of(QueueResource.GPU, requested), Map.of(QueueResource.GPU, allocated));
  }

  /** A share as KAI counts GPUs: whole cards without decimals, parts of a card as they are. */
  private static String fmt(double value) {
    return BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
  }
}
