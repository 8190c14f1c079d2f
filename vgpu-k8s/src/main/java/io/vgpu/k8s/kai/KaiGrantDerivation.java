package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A KAI fraction container's grant, derived from what no tenant can write: KAI's BindRequest for the
 * pod, the cards KAI's reservation pods reported, and the raw {@code nvidia.com/gpu.memory} label,
 * checked against this node's own cards. Pure: the caller reads the objects, this decides.
 *
 * <p>Per card the grant is {@code int(label × portion)} MiB, computed as KAI's hamicore plugin computes
 * {@code CUDA_DEVICE_MEMORY_LIMIT}: the portion parsed from the BindRequest's {@code "%.2f"} string to
 * a double, multiplied by the label as a double, truncated. When the label and what NVML reports for
 * the card disagree, the smaller is used (a grant never exceeds the card, nor KAI's number) and the
 * disagreement is reported.
 */
public final class KaiGrantDerivation {
  /** A label value as KAI parses it: a decimal integer (KAI's {@code ParseInt}). */
  private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]{1,18}");
  /** A portion as KAI writes it ({@code "%.2f"}), with some slack for hand-made objects: a plain decimal. */
  private static final Pattern DECIMAL = Pattern.compile("[0-9]{1,6}(\\.[0-9]{1,12})?");
  /** KAI's BindRequest value of {@code spec.receivedResourceType} for a shared pod. */
  public static final String FRACTION = "Fraction";

  private KaiGrantDerivation() {}

  /** What the derivation concluded. */
  public sealed interface Outcome permits Grant, Refusal {}

  /**
   * The grant.
   *
   * @param cards the granted cards' UUIDs in ordinal order (the order of {@code spec.selectedGPUGroups})
   * @param mibPerCard the MiB granted on each card, in the same order
   * @param portion the BindRequest's portion as written
   * @param labelMiB the raw node label
   * @param labelDisagreement empty, or a sentence saying where the label and NVML's figure disagreed
   */
  public record Grant(List<String> cards, List<Long> mibPerCard, String portion, long labelMiB, String labelDisagreement) implements Outcome {
    /** Validates and copies. */
    public Grant {
      cards = List.copyOf(cards);
      mibPerCard = List.copyOf(mibPerCard);
      if (cards.isEmpty() || cards.size() != mibPerCard.size()) {
        throw new IllegalArgumentException("a grant names at least one card and one size per card");
      }
    }
  }

  /**
   * No grant.
   *
   * @param reason in words, for the Event
   * @param pending whether it may be only not yet (KAI has not finished binding, or the informer lags):
   *     reported only once the pod runs
   */
  public record Refusal(String reason, boolean pending) implements Outcome {}

  /**
   * The container of {@code pod} that mounts vgpu's grant volume ({@link KaiKeys#GRANT_VOLUME}): vgpu's
   * webhook mounts it on the fraction container at CREATE and the pod spec cannot change after, unlike
   * the {@code gpu-fraction-container-name} annotation.
   *
   * @return the container, or a refusal when none or several mount it
   */
  public static FractionContainer fractionContainer(Pod pod) {
    List<FractionContainer> found = new ArrayList<>();
    if (pod.getSpec() == null) {
      return new FractionContainer(null, false, -1, "the pod has no spec");
    }
    boolean declared = pod.getSpec().getVolumes() != null && pod.getSpec().getVolumes().stream().map(Volume::getName).anyMatch(KaiKeys.GRANT_VOLUME::equals);
    List<Container> init = Objects.requireNonNullElse(pod.getSpec().getInitContainers(), List.of());
    List<Container> app = Objects.requireNonNullElse(pod.getSpec().getContainers(), List.of());
    for (int i = 0; i < init.size(); i++) {
      if (mountsGrant(init.get(i))) {
        found.add(new FractionContainer(init.get(i).getName(), true, i, ""));
      }
    }
    for (int i = 0; i < app.size(); i++) {
      if (mountsGrant(app.get(i))) {
        found.add(new FractionContainer(app.get(i).getName(), false, i, ""));
      }
    }
    if (!declared || found.isEmpty()) {
      return new FractionContainer(null, false, -1, "no container mounts volume " + KaiKeys.GRANT_VOLUME + ": vgpu's webhook did not mutate the pod at creation");
    }
    if (found.size() > 1) {
      return new FractionContainer(null, false, -1, found.size() + " containers mount volume " + KaiKeys.GRANT_VOLUME + ", vgpu's webhook mounts it on one");
    }
    return found.get(0);
  }

  private static boolean mountsGrant(Container c) {
    return c.getVolumeMounts() != null && c.getVolumeMounts().stream().map(VolumeMount::getName).anyMatch(KaiKeys.GRANT_VOLUME::equals);
  }

  /**
   * The fraction container of a pod, or why there is none.
   *
   * @param name the container's name, null when there is none
   * @param init whether it is an init container
   * @param index its index among the pod's init containers or containers (KAI's capabilities
   *     ConfigMap is {@code <prefix>-<index>}, {@code <prefix>-i<index>} for an init container)
   * @param problem empty when found, else why not
   */
  public record FractionContainer(@Nullable String name, boolean init, int index, String problem) {
    /** The name of KAI's capabilities ConfigMap for this container, given the pod's prefix annotation. */
    public String capabilitiesConfigMap(String prefix) {
      return prefix + "-" + (init ? "i" : "") + index;
    }
  }

  /**
   * Derives the grant.
   *
   * @param pod the shared pod, bound to {@code node}
   * @param bindRequest KAI's BindRequest named after the pod in its namespace, or null when there is none
   * @param reservationPods the pods of {@link KaiKeys#RESERVATION_NAMESPACE} (any labels; the derivation
   *     keeps those on {@code node} in each selected group)
   * @param memoryLabel the node's raw {@link KaiKeys#NODE_GPU_MEMORY_LABEL}, or null when absent
   * @param node this node's name
   * @param nvmlMiB this node's cards by UUID, each with the MiB NVML reports
   */
  public static Outcome derive(
      Pod pod, @Nullable GenericKubernetesResource bindRequest, List<Pod> reservationPods, @Nullable String memoryLabel, String node, Map<String, Long> nvmlMiB) {
    String podName = pod.getMetadata().getNamespace() + "/" + pod.getMetadata().getName();
    if (bindRequest == null) {
      return new Refusal("no BindRequest " + podName + " (" + KaiKeys.BIND_REQUEST_API_VERSION + ") exists", true);
    }
    String br = "BindRequest " + podName;
    String uid = Objects.requireNonNullElse(pod.getMetadata().getUid(), "");
    List<OwnerReference> owners = Objects.requireNonNullElse(bindRequest.getMetadata().getOwnerReferences(), List.of());
    if (uid.isEmpty() || owners.stream().noneMatch(o -> uid.equals(o.getUid()) && "Pod".equals(o.getKind()))) {
      return new Refusal(br + " is not owned by pod UID " + uid + " (KAI's scheduler creates it owned by the pod)", false);
    }
    Map<String, Object> spec = map(bindRequest.getAdditionalProperties().get("spec"));
    String selectedNode = text(spec.get("selectedNode"));
    if (!node.equals(selectedNode)) {
      return new Refusal(br + " spec.selectedNode '" + selectedNode + "' is not this node " + node, false);
    }
    String type = text(spec.get("receivedResourceType"));
    if (!FRACTION.equals(type)) {
      return new Refusal(br + " spec.receivedResourceType '" + type + "' is not " + FRACTION, false);
    }
    Map<String, Object> received = map(spec.get("receivedGPU"));
    String portionText = text(received.get("portion"));
    double portion = DECIMAL.matcher(portionText).matches() ? Double.parseDouble(portionText) : Double.NaN;
    if (!(portion > 0 && portion <= 1)) {
      return new Refusal(br + " spec.receivedGPU.portion '" + portionText + "' is not a decimal in (0, 1]", false);
    }
    String countText = text(received.get("count"));
    int count = countText.matches("[0-9]{1,3}") ? Integer.parseInt(countText) : 0;
    List<String> groups = new ArrayList<>();
    if (spec.get("selectedGPUGroups") instanceof List<?> list) {
      for (Object g : list) {
        groups.add(text(g));
      }
    }
    if (count <= 0 || count != groups.size() || groups.stream().anyMatch(String::isEmpty)) {
      return new Refusal(br + " spec.receivedGPU.count '" + countText + "' does not match its " + groups.size() + " spec.selectedGPUGroups " + groups, false);
    }
    Map<String, String> cardOfGroup = new LinkedHashMap<>();
    for (String group : groups) {
      String[] found = new String[1];
      Refusal missing = cardOf(group, reservationPods, node, nvmlMiB, found);
      if (missing != null) {
        return missing;
      }
      String uuid = found[0];
      for (Map.Entry<String, String> earlier : cardOfGroup.entrySet()) {
        if (earlier.getValue().equals(uuid)) {
          return new Refusal("GPU groups " + earlier.getKey() + " and " + group + " both reserve card " + uuid, false);
        }
      }
      cardOfGroup.put(group, uuid);
    }
    if (memoryLabel == null) {
      return new Refusal("node " + node + " has no label " + KaiKeys.NODE_GPU_MEMORY_LABEL, false);
    }
    long label = INTEGER.matcher(memoryLabel.strip()).matches() ? Long.parseLong(memoryLabel.strip()) : -1;
    if (label <= 0) {
      return new Refusal("node " + node + " label " + KaiKeys.NODE_GPU_MEMORY_LABEL + "='" + memoryLabel + "' is not a positive integer (MiB)", false);
    }
    List<String> cards = new ArrayList<>(cardOfGroup.values());
    List<Long> sizes = new ArrayList<>();
    StringBuilder disagreement = new StringBuilder();
    for (String card : cards) {
      long nvml = nvmlMiB.get(card);
      long base = Math.min(label, nvml);
      if (nvml != label) {
        disagreement.append(disagreement.isEmpty() ? "" : "; ").append(String.format(Locale.ROOT,
            "node label %s=%d disagrees with the %d MiB NVML reports for %s: the grant there is a portion of the smaller, %d MiB",
            KaiKeys.NODE_GPU_MEMORY_LABEL, label, nvml, card, base));
      }
      long mib = perCardMiB(base, portion);
      if (mib <= 0) {
        return new Refusal(String.format(Locale.ROOT, "portion %s of %d MiB on %s is no memory at all", portionText, base, card), false);
      }
      sizes.add(mib);
    }
    return new Grant(cards, sizes, portionText, label, disagreement.toString());
  }

  /** {@code int64(float64(labelMiB) * portion)}: KAI's hamicore plugin's arithmetic, truncating. */
  public static long perCardMiB(long labelMiB, double portion) {
    return (long) ((double) labelMiB * portion);
  }

  /**
   * The card of one GPU group: the UUID its reservation pod on this node reported, if it is one of this
   * node's, into {@code found[0]}.
   *
   * @return null when found, else why not
   */
  private static @Nullable Refusal cardOf(String group, List<Pod> reservationPods, String node, Map<String, Long> nvmlMiB, String[] found) {
    String uuid = null;
    String holder = null;
    for (Pod p : reservationPods) {
      if (!KaiKeys.RESERVATION_NAMESPACE.equals(p.getMetadata().getNamespace())
          || p.getSpec() == null
          || !node.equals(p.getSpec().getNodeName())
          || p.getMetadata().getLabels() == null
          || !group.equals(p.getMetadata().getLabels().get(KaiKeys.GPU_GROUP))
          || p.getMetadata().getDeletionTimestamp() != null
          || (p.getStatus() != null && ("Failed".equals(p.getStatus().getPhase()) || "Succeeded".equals(p.getStatus().getPhase())))) {
        continue;
      }
      String name = KaiKeys.RESERVATION_NAMESPACE + "/" + p.getMetadata().getName();
      String reported = p.getMetadata().getAnnotations() == null ? null : p.getMetadata().getAnnotations().get(KaiKeys.RESERVE_FOR_GPU_INDEX);
      if (reported == null || reported.isBlank()) {
        return new Refusal("reservation pod " + name + " of GPU group " + group + " has not reported its card (annotation " + KaiKeys.RESERVE_FOR_GPU_INDEX + ")", true);
      }
      if (uuid != null && !uuid.equals(reported)) {
        return new Refusal("reservation pods " + holder + " and " + name + " of GPU group " + group + " report different cards, " + uuid + " and " + reported, false);
      }
      uuid = reported;
      holder = name;
    }
    if (uuid == null) {
      return new Refusal("no reservation pod of GPU group " + group + " (label " + KaiKeys.GPU_GROUP + ") runs on node " + node + " in namespace " + KaiKeys.RESERVATION_NAMESPACE, true);
    }
    if (!nvmlMiB.containsKey(uuid)) {
      return new Refusal("reservation pod " + holder + " of GPU group " + group + " reports card '" + uuid + "', which is not a card of node " + node, false);
    }
    found[0] = uuid;
    return null;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(@Nullable Object o) {
    return o instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
  }

  private static String text(@Nullable Object o) {
    return o == null ? "" : String.valueOf(o);
  }
}
