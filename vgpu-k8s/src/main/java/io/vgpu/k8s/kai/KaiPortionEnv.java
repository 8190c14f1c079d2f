package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What KAI's gpusharing plugin gives a fraction container beside its cards, for a pod of KAI's dialect
 * that vgpu schedules: {@value #GPU_PORTION} and {@value #RUNAI_NUM_OF_GPUS}, both the portion of each
 * card as KAI's BindRequest writes it ({@code %.2f}, e.g. {@code 0.51}). The portion is read from the
 * grant the scheduler signed, never from the pod's annotations: {@code ceil(grant MiB × 100 / card MiB)}
 * hundredths of the card as the node registers it, which is exactly the portion the engine gave (it
 * granted {@code int(card MiB × portion)} MiB). The annotations only say which container is the
 * fraction container; what is written is informational (the limit is the grant's), so a container of any
 * other pod gets nothing.
 */
public final class KaiPortionEnv {
  /** KAI's env: the portion of each card. */
  public static final String GPU_PORTION = "GPU_PORTION";
  /** KAI's env: the same portion (KAI writes both from the BindRequest's portion). */
  public static final String RUNAI_NUM_OF_GPUS = "RUNAI_NUM_OF_GPUS";

  private KaiPortionEnv() {}

  /**
   * The env of one container: the two variables when the pod speaks KAI's dialect (its queue label,
   * which vgpu's webhook sets), shares cards ({@code gpu-fraction} or {@code gpu-memory}), this is its
   * fraction container and its first card's memory is known; empty otherwise.
   *
   * @param container the container's name
   * @param granted the cards the container was granted, with their MiB
   * @param cardMiB each card's memory as the node registers it, by UUID
   */
  public static Map<String, String> of(Pod pod, String container, List<DeviceGrant> granted, Map<String, Integer> cardMiB) {
    Map<String, String> labels = pod.getMetadata() == null || pod.getMetadata().getLabels() == null ? Map.of() : pod.getMetadata().getLabels();
    if (granted.isEmpty() || !labels.containsKey(KaiKeys.QUEUE_LABEL) || !KaiGpuRequest.of(pod).shared()) {
      return Map.of();
    }
    String fraction;
    try {
      fraction = FractionContainer.of(pod).name();
    } catch (IllegalArgumentException e) {
      return Map.of();
    }
    DeviceGrant first = granted.get(0);
    @Nullable Integer total = cardMiB.get(first.uuid());
    if (!fraction.equals(container) || total == null || total <= 0 || first.memoryMiB() <= 0) {
      return Map.of();
    }
    long hundredths = Math.min(100, (first.memoryMiB() * 100L + total - 1) / total);
    String portion = BigDecimal.valueOf(hundredths, 2).toPlainString();
    Map<String, String> env = new LinkedHashMap<>();
    env.put(GPU_PORTION, portion);
    env.put(RUNAI_NUM_OF_GPUS, portion);
    return env;
  }
}
