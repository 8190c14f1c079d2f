package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.admission.JsonPatchDiff;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.ContainerResources;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * vgpu's webhook for KAI Scheduler's pod dialect when vgpu schedules it ({@code --kai-dialect}): a pod
 * naming KAI's scheduler is turned into a pod vgpu schedules, so that kube-scheduler calls vgpu's
 * extender for it and kubelet calls vgpu's Allocate, then handed to the HAMi webhook's decision like any
 * vGPU pod. Pods naming any other scheduler go to that decision unchanged.
 *
 * <p>The turn, in order:
 *
 * <ol>
 *   <li>what KAI's admission denies is denied with KAI's message ({@link KaiGpuRequest#validate}), and a
 *       {@code gpu-fraction-container-name} that names no container with {@link FractionContainer}'s
 *       line; a container asking for one of vgpu's own sharing resources (memory, memory percentage,
 *       cores) is denied too: the pod would speak two dialects, and vgpu would have to pick one;
 *   <li>the fraction container of a pod that shares a card ({@code gpu-fraction} or {@code gpu-memory})
 *       gets {@code <count resource>: <gpu-fraction-num-devices>} in its limits, which makes kubelet call
 *       vgpu's Allocate; every container asking for cards (the fraction container, a whole-card
 *       container) gets {@code <cores resource>: 0}: KAI gives cards and portions of their memory, not
 *       compute shares, and the HAMi decision would otherwise make a bare count an exclusive card of 100
 *       cores (a whole card still holds all its memory, so nothing fits beside it);
 *   <li>the pod gets the label {@value KaiKeys#QUEUE_LABEL} with its queue as KAI's pod-grouper decides
 *       it from the pod (the label, else {@value KaiKeys#DEFAULT_QUEUE}), so that the pod keeps speaking
 *       the dialect once it names vgpu's scheduler, and loses any GPU group label ({@value
 *       KaiKeys#GPU_GROUP}, {@value KaiKeys#MULTI_GPU_GROUP_PREFIX}...): those are vgpu's output;
 *   <li>it names vgpu's scheduler. KAI's annotations stay as written.
 * </ol>
 *
 * A whole-card pod ({@code nvidia.com/gpu} limits) keeps its count. The queue of a pod's top owner is not looked up: KAI's pod-grouper reads it from the
 * owner, which the webhook would need to read every workload kind to do; a pod whose queue is set only
 * on its owner is charged to {@value KaiKeys#DEFAULT_QUEUE}.
 */
public final class KaiDialectAdmission {
  private final String kaiSchedulerName;
  private final String schedulerName;
  private final DeviceConfig config;

  /**
   * A webhook turn for one KAI scheduler name.
   *
   * @param kaiSchedulerName the scheduler name KAI's pods carry
   * @param schedulerName vgpu's scheduler name, which they get
   * @param config the device configuration (vgpu's resource names)
   */
  public KaiDialectAdmission(String kaiSchedulerName, String schedulerName, DeviceConfig config) {
    this.kaiSchedulerName = Objects.requireNonNull(kaiSchedulerName, "kaiSchedulerName");
    this.schedulerName = Objects.requireNonNull(schedulerName, "schedulerName");
    this.config = Objects.requireNonNull(config, "config");
    if (kaiSchedulerName.equals(schedulerName)) {
      throw new IllegalArgumentException("--kai-scheduler-name " + kaiSchedulerName + " must differ from vgpu's scheduler name");
    }
  }

  /**
   * Decides on a pod: one naming KAI's scheduler is turned (or denied), then {@code next} decides on it;
   * the patch returned is from the pod as submitted to the pod {@code next} admits.
   *
   * @param submitted the pod as submitted; not modified
   * @param next the HAMi webhook's decision
   */
  public AdmissionResult admit(Pod submitted, Function<Pod, AdmissionResult> next) {
    if (submitted.getSpec() == null || !kaiSchedulerName.equals(submitted.getSpec().getSchedulerName())) {
      return next.apply(submitted);
    }
    Optional<String> refused = KaiGpuRequest.validate(submitted);
    if (refused.isPresent()) {
      return AdmissionResult.denied(refused.get());
    }
    Pod pod = PodJson.copy(submitted);
    for (Container c : PodRefs.containers(pod)) {
      for (String resource : List.of(config.resourceMemoryName(), config.resourceMemoryPercentageName(), config.resourceCoreName())) {
        if (!resource.isEmpty() && ContainerResources.isPresent(c, resource)) {
          return AdmissionResult.denied("pod in KAI's dialect (schedulerName " + kaiSchedulerName + "): container " + c.getName() + " asks for " + resource
              + ", which KAI does not know; ask for a share of a card with the annotation gpu-memory or gpu-fraction");
        }
      }
    }
    KaiGpuRequest request = KaiGpuRequest.of(pod);
    if (request.shared()) {
      FractionContainer target;
      try {
        target = FractionContainer.of(pod);
      } catch (IllegalArgumentException e) {
        return AdmissionResult.denied(e.getMessage());
      }
      List<Container> list = target.list().equals("initContainers") ? pod.getSpec().getInitContainers() : pod.getSpec().getContainers();
      limits(list.get(target.index())).put(config.resourceCountName(), new Quantity(Integer.toString(request.devices())));
    }
    // KAI gives cards, not compute shares: no container of its pods asks for cores (the HAMi decision
    // would make a bare count an exclusive card of 100 cores). A whole card's memory is all of it, so
    // nothing else fits beside it; a fraction's is its portion.
    if (!config.resourceCoreName().isEmpty()) {
      for (Container c : PodRefs.containers(pod)) {
        if (ContainerResources.isPresent(c, config.resourceCountName())) {
          limits(c).put(config.resourceCoreName(), new Quantity("0"));
        }
      }
    }
    Map<String, String> labels = pod.getMetadata().getLabels() == null ? new LinkedHashMap<>() : new LinkedHashMap<>(pod.getMetadata().getLabels());
    labels.keySet().removeIf(k -> k.equals(KaiKeys.GPU_GROUP) || k.startsWith(KaiKeys.MULTI_GPU_GROUP_PREFIX));
    labels.put(KaiKeys.QUEUE_LABEL, KaiDialect.queueOf(pod));
    pod.getMetadata().setLabels(labels);
    pod.getSpec().setSchedulerName(schedulerName);
    AdmissionResult decided = next.apply(pod);
    if (!decided.allowed()) {
      return decided;
    }
    Pod admitted = decided.admittedPod();
    return new AdmissionResult(true, decided.message(), Optional.of(admitted), JsonPatchDiff.diff(PodJson.toTree(submitted), PodJson.toTree(admitted)),
        decided.requestsDevices(), decided.removed());
  }

  private static Map<String, Quantity> limits(Container c) {
    ResourceRequirements r = c.getResources();
    if (r == null) {
      r = new ResourceRequirements();
      c.setResources(r);
    }
    if (r.getLimits() == null) {
      r.setLimits(new LinkedHashMap<>());
    }
    return r.getLimits();
  }
}
