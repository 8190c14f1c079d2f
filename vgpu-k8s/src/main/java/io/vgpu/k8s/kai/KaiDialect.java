package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.CardPortion;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRequest;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.NodeUsage;
import io.vgpu.k8s.pod.PodRequestException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * KAI Scheduler's pod dialect as vgpu's own engine schedules it: which pods speak it, their queue and
 * gang, and the card portion their fraction container asks for. A pod speaks it when it is written for
 * KAI ({@code spec.schedulerName} {@value KaiKeys#SCHEDULER_NAME}) or carries KAI's queue label or one of
 * its sharing annotations; such a pod is charged to its queue (the label, else {@value
 * KaiKeys#DEFAULT_QUEUE}, as KAI's pod-grouper decides) and its fraction container asks for {@code
 * gpu-fraction-num-devices} cards (1 when absent) at KAI's portion of each: {@code gpu-fraction} rounded
 * to hundredths as KAI's BindRequest writes it ({@code %.2f}), or {@code gpu-memory} rounded up to a
 * portion of each card ({@link CardPortion#ofMemory}). Whole-card pods ({@code nvidia.com/gpu} limits)
 * keep their whole cards.
 */
public final class KaiDialect {
  private KaiDialect() {}

  /** Whether the pod is written in KAI's dialect. */
  public static boolean speaks(Pod pod, String kaiSchedulerName) {
    if (pod.getSpec() != null && kaiSchedulerName.equals(pod.getSpec().getSchedulerName())) {
      return true;
    }
    Map<String, String> labels = pod.getMetadata() == null || pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
    if (labels.containsKey(KaiKeys.QUEUE_LABEL)) {
      return true;
    }
    Map<String, String> a = KaiGpuRequest.annotations(pod);
    return a.containsKey(KaiKeys.GPU_FRACTION) || a.containsKey(KaiKeys.GPU_MEMORY) || a.containsKey(KaiKeys.POD_GROUP_NAME);
  }

  /**
   * KAI's {@code MinNodeGPUMemoryMiB}: the smallest card's memory floored to a multiple of 100 MiB, over
   * the cards above 100 MiB; 0 when there is none.
   */
  public static int smallestCardMiB(List<NodeUsage> nodes) {
    int smallest = 0;
    for (NodeUsage node : nodes) {
      for (DeviceUsage d : node.devices()) {
        int floored = d.device().memoryMiB() - d.device().memoryMiB() % 100;
        if (floored > 100 && (smallest == 0 || floored < smallest)) {
          smallest = floored;
        }
      }
    }
    return smallest;
  }

  /** The pod's queue: its {@value KaiKeys#QUEUE_LABEL} label, else {@value KaiKeys#DEFAULT_QUEUE}. */
  public static String queueOf(Pod pod) {
    Map<String, String> labels = pod.getMetadata() == null || pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
    String queue = labels.get(KaiKeys.QUEUE_LABEL);
    return queue == null || queue.isEmpty() ? KaiKeys.DEFAULT_QUEUE : queue;
  }

  /** The PodGroup the pod belongs to ({@value KaiKeys#POD_GROUP_NAME}), if it names one. */
  public static Optional<String> podGroupOf(Pod pod) {
    String name = KaiGpuRequest.annotations(pod).get(KaiKeys.POD_GROUP_NAME);
    return name == null || name.isEmpty() ? Optional.empty() : Optional.of(name);
  }

  /**
   * The portion a shared pod asks of each card, or empty for a pod that does not share one. A fraction
   * wins over memory, as KAI's scheduler parses it second.
   */
  public static Optional<CardPortion> portionOf(Pod pod) {
    KaiGpuRequest request = KaiGpuRequest.of(pod);
    if (request.fraction().isPresent()) {
      // KAI's BindRequest carries the portion as "%.2f" of the fraction: round the exact binary value.
      int hundredths = new BigDecimal(request.fraction().getAsDouble()).movePointRight(2).setScale(0, RoundingMode.HALF_EVEN).intValueExact();
      return Optional.of(CardPortion.ofHundredths(Math.max(1, Math.min(100, hundredths))));
    }
    if (request.memoryMiB().isPresent()) {
      long memory = request.memoryMiB().getAsLong();
      return Optional.of(CardPortion.ofMemory((int) Math.min(memory, Integer.MAX_VALUE)));
    }
    return Optional.empty();
  }

  /**
   * The request vgpu's engine places for a pod in KAI's dialect: {@code base} (the pod's containers as
   * their resources say) charged to the pod's queue, with the fraction container asking for its portion
   * of {@code gpu-fraction-num-devices} cards.
   *
   * @throws PodRequestException when KAI's admission would refuse the pod (its message), or the fraction
   *     container names no container
   */
  public static PodRequest request(PodRequest base, Pod pod) {
    Optional<String> refused = KaiGpuRequest.validate(pod);
    if (refused.isPresent()) {
      throw new PodRequestException(refused.get());
    }
    PodRequest queued = base.withQueue(queueOf(pod));
    Optional<CardPortion> portion = portionOf(pod);
    if (portion.isEmpty()) {
      return queued;
    }
    int devices = KaiGpuRequest.of(pod).devices();
    FractionContainer target;
    try {
      target = FractionContainer.of(pod);
    } catch (IllegalArgumentException e) {
      throw new PodRequestException(e.getMessage());
    }
    List<ContainerRequest> init = new ArrayList<>(queued.initContainers());
    List<ContainerRequest> app = new ArrayList<>(queued.containers());
    List<ContainerRequest> list = target.list().equals("initContainers") ? init : app;
    ContainerRequest c = list.get(target.index());
    list.set(target.index(), new ContainerRequest(c.name(), devices, ContainerRequest.UNSET, ContainerRequest.UNSET, c.cores(), portion.get()));
    return new PodRequest(queued.pod(), init, app, queued.constraints(), queued.overrides(), queued.cpuMilli(), queued.queue());
  }
}
