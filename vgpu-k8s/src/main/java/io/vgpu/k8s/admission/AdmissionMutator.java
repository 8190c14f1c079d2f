package io.vgpu.k8s.admission;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.pod.ContainerResources;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.Quantities;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import tools.jackson.databind.JsonNode;

/**
 * The admission webhook's decision for a pod, as a pure function of the pod, the device configuration
 * and the namespaces' quota usage. HAMi's order:
 *
 * <p>Before anything else, the annotations only the scheduler writes ({@link #SCHEDULER_OWNED}) and its
 * {@code hami.io/vgpu-node} label are removed from every pod, whoever it is for: a pod created with
 * them would otherwise claim cards it was never granted. A pod labelled {@code hami.io/webhook=ignore}
 * in a namespace the device config lists ({@code webhookIgnoreLabelNamespaces}) is then allowed with
 * only that removal; elsewhere the label changes nothing.
 *
 * <ol>
 *   <li>a pod without containers is denied; a pod any of whose containers asks for the vendor's
 *       device resources (count, memory, memory percentage or cores) is denied when a container is
 *       privileged or {@code spec.nodeName} is set, whatever scheduler it names (else it would reach
 *       the node without this scheduler's grant); a pod addressed to another scheduler is then allowed
 *       unchanged;
 *   <li>each init container, then each app container, is checked and defaulted: vgpu denies a negative,
 *       fractional or out-of-range GPU quantity (HAMi would silently drop the request); a {@code
 *       gpumem-percentage} outside 0..100 is denied; {@code nvidia.com/priority} becomes env {@code
 *       CUDA_TASK_PRIORITY}; a {@code gpuCorePolicy} other than {@code default} becomes env {@code
 *       GPU_CORE_UTILIZATION_POLICY}; memory or cores without a count get {@code defaultGPUNum} cards; a
 *       count without cores and without memory (or with 100 percent) gets {@code gpucores: 100}, an
 *       exclusive card; GPU pods get the configured runtime class; with {@code overwriteEnv}, containers
 *       without GPU get {@code NVIDIA_VISIBLE_DEVICES=none};
 *   <li>a privileged container in a pod that asks for GPUs is denied;
 *   <li>a GPU pod gets the scheduler name, and is denied when {@code spec.nodeName} is set; with CPU-only
 *       placement on, a pod without GPUs gets it too unless {@code spec.nodeName} is set;
 *   <li>the namespace quota is checked on the requested MiB and cores times the card count (app
 *       containers summed, init containers as their peak; a percentage or whole card counts 0 MiB here).
 * </ol>
 */
public final class AdmissionMutator {
  /** The scheduler name HAMi's chart configures. */
  public static final String DEFAULT_SCHEDULER_NAME = "hami-scheduler";

  /** The label that exempts a pod, in the namespaces the device config lists. */
  public static final String IGNORE_LABEL = "hami.io/webhook";

  /** Pod annotations only the scheduler and the device plugin write: HAMi's, and the grant's signature. */
  public static final List<String> SCHEDULER_OWNED =
      List.of(
          HamiAnnotations.ASSIGNED_NODE,
          HamiAnnotations.ASSIGNED_TIME,
          HamiAnnotations.DEVICES_TO_ALLOCATE,
          HamiAnnotations.DEVICES_ALLOCATED,
          HamiAnnotations.BIND_PHASE,
          HamiAnnotations.BIND_TIME,
          GrantSignature.ANNOTATION);

  private static final String KUBE_DEFAULT_SCHEDULER = "default-scheduler";
  private static final String TASK_PRIORITY_ENV = "CUDA_TASK_PRIORITY";
  private static final String CORE_POLICY_ENV = "GPU_CORE_UTILIZATION_POLICY";
  private static final BigDecimal INT32_MAX = BigDecimal.valueOf(Integer.MAX_VALUE);

  private final DeviceConfig config;
  private final String schedulerName;
  private final boolean overwriteDefaultScheduler;
  private final boolean placeCpuOnlyPods;

  /**
   * A mutator for one device configuration that hands GPU pods naming {@code default-scheduler} to
   * {@code schedulerName}, as HAMi does by default.
   *
   * @param config the device configuration (resource names, defaults, env switches)
   * @param schedulerName the scheduler GPU pods are handed to
   */
  public AdmissionMutator(DeviceConfig config, String schedulerName) {
    this(config, schedulerName, true);
  }

  /**
   * A mutator for one device configuration.
   *
   * @param config the device configuration (resource names, defaults, env switches)
   * @param schedulerName the scheduler GPU pods are handed to
   * @param overwriteDefaultScheduler whether a pod that names {@code default-scheduler} is handed over
   *     too (HAMi's {@code --force-overwrite-default-scheduler}); when false it is left as it is
   */
  public AdmissionMutator(DeviceConfig config, String schedulerName, boolean overwriteDefaultScheduler) {
    this(config, schedulerName, overwriteDefaultScheduler, false);
  }

  /**
   * A mutator for one device configuration.
   *
   * @param config the device configuration (resource names, defaults, env switches)
   * @param schedulerName the scheduler GPU pods are handed to
   * @param overwriteDefaultScheduler whether a pod that names {@code default-scheduler} is handed over
   *     too (HAMi's {@code --force-overwrite-default-scheduler}); when false it is left as it is
   * @param placeCpuOnlyPods whether pods without GPUs are handed to {@code schedulerName} as well, so
   *     that its extender places them ({@code --place-cpu-only-pods})
   */
  public AdmissionMutator(DeviceConfig config, String schedulerName, boolean overwriteDefaultScheduler, boolean placeCpuOnlyPods) {
    this.config = config;
    this.schedulerName = schedulerName;
    this.overwriteDefaultScheduler = overwriteDefaultScheduler;
    this.placeCpuOnlyPods = placeCpuOnlyPods;
  }

  /**
   * Decides on a pod.
   *
   * @param submitted the pod as submitted; not modified
   * @param quotas each namespace's quota and current usage
   */
  public AdmissionResult admit(Pod submitted, Function<String, QuotaUsage> quotas) {
    PodSpec submittedSpec = submitted.getSpec();
    if (submittedSpec == null || submittedSpec.getContainers() == null || submittedSpec.getContainers().isEmpty()) {
      return AdmissionResult.denied("pod has no containers");
    }
    JsonNode before = PodJson.toTree(submitted);
    Pod pod = PodJson.fromTree(before.deepCopy());
    List<String> removed = removeSchedulerOwned(pod);
    Map<String, String> labels = pod.getMetadata().getLabels();
    if (labels != null
        && "ignore".equals(labels.get(IGNORE_LABEL))
        && config.webhookIgnoreLabelNamespaces().contains(PodRefs.of(pod).namespace())) {
      return new AdmissionResult(true, "pod is labelled " + IGNORE_LABEL + "=ignore", Optional.of(pod), JsonPatchDiff.diff(before, PodJson.toTree(pod)), false, removed);
    }
    PodSpec spec = pod.getSpec();
    List<Container> all = new ArrayList<>();
    if (spec.getInitContainers() != null) {
      all.addAll(spec.getInitContainers());
    }
    all.addAll(spec.getContainers());
    // Whatever scheduler it names: a vGPU pod placed on a node by its owner, or privileged, would reach
    // the node agent without a grant of this scheduler's or open every card past the limits.
    if (asksForVgpu(all)) {
      Optional<String> privileged = firstPrivileged(all);
      if (privileged.isPresent()) {
        return AdmissionResult.denied(privilegedMessage(privileged.get()));
      }
      if (nodeAssigned(spec)) {
        return AdmissionResult.denied(nodeAssignedMessage(spec));
      }
    }
    String requestedScheduler = submittedSpec.getSchedulerName();
    if (requestedScheduler != null
        && !requestedScheduler.isEmpty()
        && !(requestedScheduler.equals(KUBE_DEFAULT_SCHEDULER) && overwriteDefaultScheduler)
        && !requestedScheduler.equals(schedulerName)) {
      return new AdmissionResult(
          true, "pod already has different scheduler assigned", Optional.of(pod), JsonPatchDiff.diff(before, PodJson.toTree(pod)), false, removed);
    }
    boolean hasResource = false;
    for (Container c : all) {
      Optional<String> invalid = invalidQuantity(c);
      if (invalid.isPresent()) {
        return AdmissionResult.denied(invalid.get());
      }
      Optional<String> badPercentage = percentageOutOfRange(c);
      if (badPercentage.isPresent()) {
        return AdmissionResult.denied(badPercentage.get());
      }
      hasResource |= mutateContainer(c, spec);
    }
    Optional<String> privileged = firstPrivileged(all);
    if (privileged.isPresent() && hasResource) {
      return AdmissionResult.denied(privilegedMessage(privileged.get()));
    }
    boolean nodeAssigned = nodeAssigned(spec);
    if (hasResource) {
      spec.setSchedulerName(schedulerName);
      if (nodeAssigned) {
        return AdmissionResult.denied(nodeAssignedMessage(spec));
      }
    } else if (placeCpuOnlyPods && !nodeAssigned) {
      spec.setSchedulerName(schedulerName);
    }
    Optional<String> overQuota = exceedsQuota(spec, quotas.apply(PodRefs.of(pod).namespace()));
    if (overQuota.isPresent()) {
      return AdmissionResult.denied(overQuota.get());
    }
    return new AdmissionResult(true, "", Optional.of(pod), JsonPatchDiff.diff(before, PodJson.toTree(pod)), hasResource, removed);
  }

  /**
   * Whether any container asks for a vendor device resource (count, memory, memory percentage or
   * cores) other than 0, in its limits or its requests; an unreadable quantity counts as asking.
   */
  private boolean asksForVgpu(List<Container> containers) {
    for (Container c : containers) {
      for (String resource : List.of(config.resourceCountName(), config.resourceMemoryName(), config.resourceMemoryPercentageName(), config.resourceCoreName())) {
        try {
          if (ContainerResources.value(c, resource).map(v -> v.signum() != 0).orElse(false)) {
            return true;
          }
        } catch (IllegalArgumentException e) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean nodeAssigned(PodSpec spec) {
    return spec.getNodeName() != null && !spec.getNodeName().isEmpty();
  }

  private static String nodeAssignedMessage(PodSpec spec) {
    return "pod has node assigned (spec.nodeName: " + spec.getNodeName() + ")";
  }

  private static String privilegedMessage(String container) {
    return "container " + container + " is privileged";
  }

  /** Removes the scheduler's annotations and node label; returns what was removed. */
  private static List<String> removeSchedulerOwned(Pod pod) {
    List<String> removed = new ArrayList<>();
    Map<String, String> annotations = pod.getMetadata().getAnnotations();
    if (annotations != null) {
      for (String key : new ArrayList<>(annotations.keySet())) {
        if (SCHEDULER_OWNED.contains(key)) {
          annotations.remove(key);
          removed.add("annotation " + key);
        }
      }
    }
    Map<String, String> labels = pod.getMetadata().getLabels();
    if (labels != null && labels.remove(HamiAnnotations.ASSIGNED_NODE) != null) {
      removed.add("label " + HamiAnnotations.ASSIGNED_NODE);
    }
    return removed;
  }

  // --- Container checks and defaults

  private List<String> vendorResources() {
    List<String> names = new ArrayList<>();
    for (String n :
        List.of(
            config.resourceCountName(),
            config.resourceMemoryName(),
            config.resourceMemoryPercentageName(),
            config.resourceCoreName(),
            config.resourcePriorityName())) {
      if (!n.isEmpty()) {
        names.add(n);
      }
    }
    return names;
  }

  /** vgpu's stricter check: every GPU quantity, limit or request, is a whole number in range. */
  private Optional<String> invalidQuantity(Container c) {
    for (String resource : vendorResources()) {
      for (Map<String, Quantity> resources : List.of(ContainerResources.limits(c), ContainerResources.requests(c))) {
        Quantity q = resources.get(resource);
        if (q == null) {
          continue;
        }
        String where = "container " + c.getName() + ": " + resource + " ";
        BigDecimal value;
        try {
          value = Quantities.parse(q.toString());
        } catch (IllegalArgumentException e) {
          return Optional.of(where + e.getMessage());
        }
        if (value.signum() < 0) {
          return Optional.of(where + q + " is negative");
        }
        if (!Quantities.isInteger(value)) {
          return Optional.of(where + q + " is not a whole number");
        }
        BigDecimal max = resource.equals(config.resourceMemoryName())
            ? INT32_MAX.divideToIntegralValue(BigDecimal.valueOf(Math.max(config.memoryFactor(), 1)))
            : INT32_MAX;
        if (value.compareTo(max) > 0) {
          return Optional.of(where + q + " exceeds " + max.toPlainString());
        }
      }
    }
    return Optional.empty();
  }

  /** HAMi's check of {@code gpumem-percentage} (0 means unset). */
  private Optional<String> percentageOutOfRange(Container c) {
    String name = config.resourceMemoryPercentageName();
    Optional<Long> pct = roundedUp(c, name);
    if (pct.isPresent() && (pct.get() < 0 || pct.get() > 100)) {
      return Optional.of(
          "invalid " + name + " value " + pct.get() + " in container " + c.getName() + ": must be an integer between 0 and 100");
    }
    return Optional.empty();
  }

  /** A resource's value rounded up, as Kubernetes' {@code Quantity.Value()}; limits, then requests. */
  private static Optional<Long> roundedUp(Container c, String name) {
    return ContainerResources.value(c, name).map(v -> v.setScale(0, RoundingMode.CEILING).longValue());
  }

  /** Applies HAMi's per-container defaults; returns whether the container asks for the vendor's devices. */
  private boolean mutateContainer(Container c, PodSpec spec) {
    Optional<Long> priority = ContainerResources.limit(c, config.resourcePriorityName())
        .map(q -> Quantities.parse(q.toString()).setScale(0, RoundingMode.CEILING).longValue());
    priority.ifPresent(p -> appendEnv(c, TASK_PRIORITY_ENV, Long.toString(p)));
    if (!config.gpuCorePolicy().isEmpty() && !config.gpuCorePolicy().equals("default")) {
      appendEnv(c, CORE_POLICY_ENV, config.gpuCorePolicy());
    }
    boolean hasResource = addDefaultCount(c);
    if (addExclusiveCores(c)) {
      hasResource = true;
    }
    if (hasResource && spec.getRuntimeClassName() == null && !config.runtimeClassName().isEmpty()) {
      spec.setRuntimeClassName(config.runtimeClassName());
    }
    if (!hasResource && config.overwriteEnv()) {
      appendEnv(c, "NVIDIA_VISIBLE_DEVICES", "none");
    }
    return hasResource;
  }

  /** HAMi reads only limits here: memory or cores without a count get {@code defaultGPUNum} cards. */
  private boolean addDefaultCount(Container c) {
    if (ContainerResources.limit(c, config.resourceCountName()).isPresent()) {
      return true;
    }
    boolean asksForShare =
        ContainerResources.limit(c, config.resourceCoreName()).isPresent()
            || ContainerResources.limit(c, config.resourceMemoryName()).isPresent()
            || ContainerResources.limit(c, config.resourceMemoryPercentageName()).isPresent();
    if (asksForShare && config.defaultGPUNum() > 0) {
      mutableLimits(c).put(config.resourceCountName(), new Quantity(Integer.toString(config.defaultGPUNum())));
      return true;
    }
    return false;
  }

  /** A count without cores, and without memory (or with 100 percent of it), means a whole card. */
  private boolean addExclusiveCores(Container c) {
    if (!ContainerResources.isPresent(c, config.resourceCountName())
        || config.resourceCoreName().isEmpty()
        || ContainerResources.isPresent(c, config.resourceCoreName())) {
      return false;
    }
    Optional<Long> pct = roundedUp(c, config.resourceMemoryPercentageName());
    boolean exclusive;
    if (pct.isPresent()) {
      exclusive = pct.get() == 100;
    } else {
      exclusive = config.resourceMemoryName().isEmpty() || !ContainerResources.isPresent(c, config.resourceMemoryName());
    }
    if (exclusive) {
      mutableLimits(c).put(config.resourceCoreName(), new Quantity("100"));
    }
    return exclusive;
  }

  private static Map<String, Quantity> mutableLimits(Container c) {
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

  private static void appendEnv(Container c, String name, String value) {
    List<EnvVar> env = c.getEnv() == null ? new ArrayList<>() : new ArrayList<>(c.getEnv());
    env.add(new EnvVar(name, value, null));
    c.setEnv(env);
  }

  private static Optional<String> firstPrivileged(List<Container> containers) {
    for (Container c : containers) {
      SecurityContext sc = c.getSecurityContext();
      if (sc != null && Boolean.TRUE.equals(sc.getPrivileged())) {
        return Optional.of(c.getName());
      }
    }
    return Optional.empty();
  }

  // --- Quota pre-check

  /** What one container asks for in quota terms at admission: HAMi's {@code Memreq × Nums}, {@code Coresreq × Nums}. */
  private record Demand(long memory, long cores) {}

  private Optional<Demand> demand(Container c) {
    Optional<BigDecimal> count = ContainerResources.value(c, config.resourceCountName());
    if (count.isEmpty() || count.get().signum() <= 0) {
      return Optional.empty();
    }
    long nums = count.get().longValueExact();
    long memory = ContainerResources.value(c, config.resourceMemoryName())
        .map(v -> v.longValueExact() * Math.max(config.memoryFactor(), 1))
        .orElse(0L);
    boolean percentage = ContainerResources.value(c, config.resourceMemoryPercentageName())
        .map(v -> v.signum() > 0)
        .orElse(false);
    if (!percentage && memory == 0) {
      memory = config.defaultMemory();
    }
    long cores = ContainerResources.value(c, config.resourceCoreName())
        .map(BigDecimal::longValueExact)
        .orElse((long) config.defaultCores());
    return Optional.of(new Demand(memory * nums, cores * nums));
  }

  private Optional<String> exceedsQuota(PodSpec spec, QuotaUsage usage) {
    long appMemory = 0;
    long appCores = 0;
    for (Container c : spec.getContainers()) {
      Optional<Demand> d = demand(c);
      if (d.isPresent()) {
        appMemory += d.get().memory();
        appCores += d.get().cores();
      }
    }
    long initMemory = 0;
    long initCores = 0;
    if (spec.getInitContainers() != null) {
      for (Container c : spec.getInitContainers()) {
        Optional<Demand> d = demand(c);
        if (d.isPresent()) {
          initMemory = Math.max(initMemory, d.get().memory());
          initCores = Math.max(initCores, d.get().cores());
        }
      }
    }
    long memory = Math.max(appMemory, initMemory);
    long cores = Math.max(appCores, initCores);
    if (memory == 0 && cores == 0) {
      return Optional.empty();
    }
    QuotaLimits limits = usage.limits();
    if (limits.memoryMiB() != QuotaLimits.UNLIMITED) {
      long limit = limits.memoryMiB() * Math.max(config.memoryFactor(), 1);
      if (usage.usedMemoryMiB() + memory > limit) {
        return Optional.of(quotaMessage(usage.namespace(), memory, "MiB of limits." + config.resourceMemoryName(), usage.usedMemoryMiB(), limit));
      }
    }
    if (limits.cores() != QuotaLimits.UNLIMITED && usage.usedCores() + cores > limits.cores()) {
      return Optional.of(quotaMessage(usage.namespace(), cores, "of limits." + config.resourceCoreName(), usage.usedCores(), limits.cores()));
    }
    return Optional.empty();
  }

  private static String quotaMessage(String namespace, long requested, String what, long used, long limit) {
    return "exceeding resource quota: namespace " + namespace + " requests " + requested + " " + what + " (used " + used + ", limit " + limit + ")";
  }
}
