package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.k8s.kai.FractionContainer;
import io.vgpu.k8s.kai.KaiDialect;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The pods of KAI Scheduler's dialect as vgpu's scheduler places them ({@code --kai-dialect}): which
 * pods speak it, the queue each is charged to, the gang it belongs to, and the request the engine places.
 *
 * <p>A pod's queue is its PodGroup's {@code spec.queue} when it names a PodGroup that exists and names
 * one (KAI schedules a PodGroup in its queue), else its {@code kai.scheduler/queue} label, else {@code
 * default-queue}. A pod belongs to a gang when its {@code pod-group-name} names a PodGroup with {@code
 * minMember} above 1; one naming a PodGroup that does not exist (yet), or whose minimum cannot be read,
 * waits for it, as under KAI; a pod naming none, or a PodGroup of {@code minMember} 1, is a group of one.
 */
final class DialectPods {
  private final String kaiSchedulerName;
  private final KaiObjects objects;
  private final String countResource;
  private final String coresResource;

  /**
   * A gang, by its PodGroup.
   *
   * @param group the PodGroup, {@code namespace/name}
   * @param minMember how many members must be placed together
   * @param problem why the PodGroup cannot be read, when it cannot: its members wait
   */
  record Gang(PodRef group, int minMember, Optional<String> problem) {}

  /**
   * The dialect for one KAI scheduler name.
   *
   * @param countResource the resource the webhook gives a fraction container its cards with
   * @param coresResource the resource it gives it 0 of
   */
  DialectPods(String kaiSchedulerName, KaiObjects objects, String countResource, String coresResource) {
    this.kaiSchedulerName = Objects.requireNonNull(kaiSchedulerName);
    this.objects = Objects.requireNonNull(objects);
    this.countResource = Objects.requireNonNull(countResource);
    this.coresResource = Objects.requireNonNull(coresResource);
  }

  /** Whether a pod speaks KAI's dialect ({@link KaiDialect#speaks}). */
  boolean speaks(Pod pod) {
    return KaiDialect.speaks(pod, kaiSchedulerName);
  }

  /** The queue a pod of the dialect is charged to. */
  String queueOf(Pod pod) {
    PodRef ref = PodRefs.of(pod);
    return KaiDialect.podGroupOf(pod)
        .flatMap(name -> objects.podGroup(ref.namespace(), name))
        .flatMap(KaiObjects.PodGroup::queue)
        .orElseGet(() -> KaiDialect.queueOf(pod));
  }

  /** The gang a pod belongs to; empty for a group of one. */
  Optional<Gang> gangOf(Pod pod) {
    PodRef ref = PodRefs.of(pod);
    Optional<String> name = KaiDialect.podGroupOf(pod);
    if (name.isEmpty()) {
      return Optional.empty();
    }
    PodRef key = new PodRef(ref.namespace(), name.get());
    Optional<KaiObjects.PodGroup> group = objects.podGroup(ref.namespace(), name.get());
    if (group.isEmpty()) {
      // As under KAI, a pod joins the group it names: one that does not exist (yet) holds it.
      return Optional.of(new Gang(key, 0, Optional.of("PodGroup " + key + " does not exist")));
    }
    if (group.get().minMember() <= 1 && group.get().problem().isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new Gang(key, group.get().minMember(), group.get().problem()));
  }

  /** Whether a pod belongs to this gang (names its PodGroup, in its namespace). */
  static boolean member(Pod pod, PodRef group) {
    return PodRefs.of(pod).namespace().equals(group.namespace()) && KaiDialect.podGroupOf(pod).map(group.name()::equals).orElse(false);
  }

  /**
   * The request the engine places for a pod of the dialect: {@link KaiDialect#request} charged to {@link
   * #queueOf}. The fraction container of a pod that shares a card must ask for exactly {@code
   * gpu-fraction-num-devices} cards, as vgpu's webhook gives it: a pod created around the webhook (or
   * edited where the chart's policies do not hold) is refused, for kubelet would allocate it another
   * number of cards than its grant holds.
   *
   * @param base the pod's request as its resources say
   * @throws PodRequestException naming the container, the counts, and the annotation, or KAI's admission
   *     message
   */
  PodRequest request(PodRequest base, Pod pod) {
    KaiGpuRequest gpu = KaiGpuRequest.of(pod);
    if (!gpu.shared()) {
      return KaiDialect.request(base, pod).withQueue(queueOf(pod));
    }
    FractionContainer target;
    try {
      target = FractionContainer.of(pod);
    } catch (IllegalArgumentException e) {
      throw new PodRequestException(e.getMessage());
    }
    List<ContainerRequest> list = target.list().equals("initContainers") ? base.initContainers() : base.containers();
    long asked = list.get(target.index()).count();
    if (asked != gpu.devices()) {
      throw new PodRequestException("pod in KAI's dialect: container " + target.name() + " asks for " + (asked == ContainerRequest.UNSET ? 0 : asked)
          + " cards where gpu-fraction-num-devices says " + gpu.devices() + " (vgpu's webhook gives the fraction container that many); it is not scheduled");
    }
    // KAI's admission judged the pod as its author wrote it, before the webhook gave the fraction container its cards.
    return KaiDialect.request(base, asWritten(pod, target)).withQueue(queueOf(pod));
  }

  /** The pod without the count and cores the webhook gave its fraction container. */
  private Pod asWritten(Pod pod, FractionContainer target) {
    Pod copy = PodJson.copy(pod);
    List<Container> list = target.list().equals("initContainers") ? copy.getSpec().getInitContainers() : copy.getSpec().getContainers();
    Container c = list.get(target.index());
    if (c.getResources() != null) {
      for (Map<String, Quantity> resources : java.util.Arrays.asList(c.getResources().getLimits(), c.getResources().getRequests())) {
        if (resources != null) {
          resources.remove(countResource);
          resources.remove(coresResource);
        }
      }
    }
    return copy;
  }
}
