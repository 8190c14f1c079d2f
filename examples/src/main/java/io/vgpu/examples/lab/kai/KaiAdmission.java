package io.vgpu.examples.lab.kai;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.examples.lab.apiserver.PodAdmission;
import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.k8s.kai.KaiGpuRequest;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import java.util.Optional;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * KAI's admission webhook on pod CREATE, with GPU sharing and the hamicore plugin on (kai.md §1.2): the
 * validation of a pod's GPU request, then on a fraction pod (one with {@code gpu-fraction} or {@code
 * gpu-memory})
 *
 * <ul>
 *   <li>gpusharing: the annotation {@code runai/shared-gpu-configmap}; on the fraction container the env
 *       {@code NVIDIA_VISIBLE_DEVICES}, {@code RUNAI_NUM_OF_GPUS} and {@code GPU_PORTION} from the
 *       capabilities ConfigMap, {@code envFrom} the {@code -evar} ConfigMap, and that ConfigMap as a pod
 *       volume;
 *   <li>hamicore: {@code CUDA_DEVICE_MEMORY_LIMIT} from the capabilities ConfigMap, optional;
 *   <li>runtimeenforcement: {@code runtimeClassName: nvidia} when the pod names none.
 * </ul>
 *
 * An env var the pod already sets is left as the pod's owner wrote it, as KAI leaves it: that is how a
 * tenant can override KAI's limit, and what vgpu must not let matter.
 */
public final class KaiAdmission implements PodAdmission {
  /** The webhook's name in the API server's denial. */
  public static final String WEBHOOK = "kai-admission";
  /** The runtime class KAI enforces on fraction pods ({@code --gpu-fraction-runtime-class-name}'s default). */
  public static final String RUNTIME_CLASS = "nvidia";
  private static final String SUFFIX = "-shared-gpu";
  /** Room kept in a DNS label (63) for the prefix's suffixes: {@code -i<index>-evar-vol}. */
  private static final int MAX_BASE = 63 - 8 - SUFFIX.length() - 13;

  private final Supplier<String> random7;

  /**
   * An admission.
   *
   * @param random7 seven random lower-case alphanumerics per fraction pod, as KAI generates them
   */
  public KaiAdmission(Supplier<String> random7) {
    this.random7 = random7;
  }

  /**
   * The outcome.
   *
   * @param pod the pod to store, when allowed
   * @param denial KAI's message, when denied
   */
  public record Outcome(JsonNode pod, Optional<String> denial) {}

  @Override
  public String name() {
    return WEBHOOK;
  }

  @Override
  public PodAdmission.Result mutate(JsonNode pod, UserInfo user) {
    if (validation(pod).isPresent()) {
      return new PodAdmission.Result(pod, Optional.empty()); // the validating phase denies it
    }
    return new PodAdmission.Result(admit(pod).pod(), Optional.empty());
  }

  @Override
  public Optional<String> validate(JsonNode pod, UserInfo user) {
    return validation(pod);
  }

  /** KAI's validation of a pod it schedules; empty for a valid one and for other schedulers' pods. */
  private static Optional<String> validation(JsonNode pod) {
    if (!KaiKeys.SCHEDULER_NAME.equals(pod.path("spec").path("schedulerName").asString(""))) {
      return Optional.empty();
    }
    Pod typed = PodJson.mapper().treeToValue(pod, Pod.class);
    Optional<String> invalid = KaiGpuRequest.validate(typed);
    if (invalid.isPresent() || !KaiGpuRequest.of(typed).shared()) {
      return invalid;
    }
    return FractionContainer.of(pod).isPresent() ? Optional.empty()
        : Optional.of("the container named by " + KaiKeys.GPU_FRACTION_CONTAINER_NAME + " is not in the pod");
  }

  /**
   * Both phases on a pod being created (namespace set), as the pod leaves KAI's webhooks: KAI's pods
   * only, anything else as sent.
   */
  public Outcome admit(JsonNode submitted) {
    ObjectNode pod = (ObjectNode) submitted.deepCopy();
    if (!KaiKeys.SCHEDULER_NAME.equals(pod.path("spec").path("schedulerName").asString(""))) {
      return new Outcome(pod, Optional.empty());
    }
    Optional<String> invalid = validation(pod);
    if (invalid.isPresent()) {
      return new Outcome(pod, invalid);
    }
    if (!KaiGpuRequest.of(PodJson.mapper().treeToValue(pod, Pod.class)).shared()) {
      return new Outcome(pod, Optional.empty());
    }
    Optional<FractionContainer> target = FractionContainer.of(pod);
    FractionContainer fc = target.get();
    ObjectNode annotations = pod.withObject("metadata").withObject("annotations");
    String prefix = annotations.path(KaiKeys.SHARED_GPU_CONFIGMAP).asString("");
    if (prefix.isEmpty()) {
      prefix = prefix(pod);
      annotations.put(KaiKeys.SHARED_GPU_CONFIGMAP, prefix);
    }
    String capabilities = fc.capabilitiesConfigMap(prefix);
    ObjectNode container = (ObjectNode) pod.at(fc.pointer());
    ArrayNode env = container.withArray("env");
    for (String key : new String[] {"NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION"}) {
      addFromConfigMap(env, key, capabilities, false);
    }
    ObjectNode envFrom = container.withArray("envFrom").addObject();
    envFrom.putObject("configMapRef").put("name", fc.directEnvConfigMap(prefix)).put("optional", false);
    ObjectNode volume = pod.withObject("spec").withArray("volumes").addObject();
    volume.put("name", sanitized(capabilities + "-vol"));
    volume.putObject("configMap").put("name", capabilities);
    // hamicore: the limit the binder will write, optional so a pod runs when it writes none
    addFromConfigMap(env, KaiKeys.CUDA_DEVICE_MEMORY_LIMIT, capabilities, true);
    // runtimeenforcement
    if (pod.path("spec").path("runtimeClassName").asString("").isEmpty()) {
      pod.withObject("spec").put("runtimeClassName", RUNTIME_CLASS);
    }
    return new Outcome(pod, Optional.empty());
  }

  private static void addFromConfigMap(ArrayNode env, String key, String configMap, boolean optional) {
    for (JsonNode e : env) {
      if (e.path("name").asString("").equals(key)) {
        return;
      }
    }
    ObjectNode ref = env.addObject().put("name", key).putObject("valueFrom").putObject("configMapKeyRef");
    ref.put("name", configMap).put("key", key);
    if (optional) {
      ref.put("optional", true);
    }
  }

  /** {@code <owner or pod name, truncated>-<7 random>-shared-gpu}. */
  private String prefix(JsonNode pod) {
    JsonNode owners = pod.path("metadata").path("ownerReferences");
    String base = owners.size() > 0 ? owners.get(0).path("name").asString("") : pod.path("metadata").path("name").asString("");
    if (base.isEmpty()) {
      base = pod.path("metadata").path("generateName").asString("pod");
    }
    if (base.length() > MAX_BASE) {
      base = base.substring(0, MAX_BASE);
    }
    return base + "-" + random7.get() + SUFFIX;
  }

  /** A DNS label: lower case, at most 63 characters, no trailing dash. */
  static String sanitized(String name) {
    String out = name.toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9-]", "-");
    if (out.length() > 63) {
      out = out.substring(0, 63);
    }
    return out.replaceAll("-+$", "");
  }
}
