package io.vgpu.k8s.kai;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * What a pod asks of KAI for GPUs: a fraction ({@code gpu-fraction}), a memory amount ({@code
 * gpu-memory}), on how many cards ({@code gpu-fraction-num-devices}), or whole cards ({@code
 * nvidia.com/gpu} limits). {@link #validate} is KAI's admission check with its messages; {@link #of}
 * reads a pod the way KAI's scheduler does once admission let it through.
 *
 * @param fraction the fraction of one card, when the pod asks by fraction
 * @param memoryMiB the MiB of one card, when the pod asks by memory
 * @param devices how many cards the fraction is of (1 when not said)
 * @param wholeCards the sum of the containers' {@code nvidia.com/gpu} limits
 */
public record KaiGpuRequest(OptionalDouble fraction, OptionalLong memoryMiB, int devices, long wholeCards) {
  /** The whole-card resource. */
  public static final String GPU_RESOURCE = "nvidia.com/gpu";
  /** The annotation that asks for MPS. */
  public static final String MPS_ANNOTATION = "mps";

  /** Whether the pod shares a card: it asks by fraction or by memory. */
  public boolean shared() {
    return fraction.isPresent() || memoryMiB.isPresent();
  }

  /** Whether the pod asks for any GPU. */
  public boolean gpu() {
    return shared() || wholeCards > 0;
  }

  /**
   * What the pod asks of its queue in cards while it is pending, as KAI counts it: a fraction rounded to
   * hundredths per card ({@code round(f × 100) / 100}), a memory amount unrounded over the smallest card
   * ({@code MiB / smallestCardMiB}, 0 when no card is known), whole cards as they are.
   *
   * @param smallestCardMiB the smallest card's memory floored to 100 MiB ({@link KaiDialect#smallestCardMiB})
   */
  public double pendingCards(int smallestCardMiB) {
    if (fraction.isPresent()) {
      return Math.round(fraction.getAsDouble() * 100) * devices / 100.0;
    }
    if (memoryMiB.isPresent()) {
      return smallestCardMiB <= 0 ? 0 : (double) memoryMiB.getAsLong() * devices / smallestCardMiB;
    }
    return wholeCards;
  }

  /**
   * KAI admission's verdict on a pod's GPU request ({@code ValidateGpuRequests}): the message it denies
   * the pod with, or empty when it lets it through.
   */
  public static Optional<String> validate(Pod pod) {
    Map<String, String> a = annotations(pod);
    String fraction = a.get(KaiKeys.GPU_FRACTION);
    String memory = a.get(KaiKeys.GPU_MEMORY);
    String count = a.get(KaiKeys.GPU_FRACTION_NUM_DEVICES);
    if (fraction != null && memory != null) {
      return Optional.of("cannot request both GPU and GPU memory");
    }
    boolean gpuLimit = false;
    for (Container c : containers(pod)) {
      boolean limit = c.getResources() != null && c.getResources().getLimits() != null && c.getResources().getLimits().containsKey(GPU_RESOURCE);
      boolean request = c.getResources() != null && c.getResources().getRequests() != null && c.getResources().getRequests().containsKey(GPU_RESOURCE);
      if (request && !limit) {
        return Optional.of("GPU is not not listed in resource limits");
      }
      gpuLimit |= limit;
    }
    if (fraction != null && gpuLimit) {
      return Optional.of("cannot have both GPU fraction request and whole GPU resource request/limit");
    }
    if (memory != null && gpuLimit) {
      return Optional.of("cannot request both GPU and GPU memory");
    }
    if (fraction != null && parseFraction(fraction).isEmpty()) {
      return Optional.of("gpu-fraction annotation value must be a positive number smaller than 1.0");
    }
    if (memory != null && parseMemory(memory).isEmpty()) {
      return Optional.of("gpu-memory annotation value must be a positive integer greater than 0");
    }
    if (count != null) {
      if (fraction == null && memory == null) {
        return Optional.of("cannot request multiple fractional devices without specifying fraction portion or gpu-memory");
      }
      if (parseCount(count).isEmpty()) {
        return Optional.of("fraction count annotation value must be a positive integer greater than 0");
      }
    }
    if ("true".equals(a.get(MPS_ANNOTATION)) && fraction == null && memory == null && !fractionalLimit(pod)) {
      return Optional.of("MPS is only supported with GPU fraction request");
    }
    return Optional.empty();
  }

  /**
   * The request as KAI's scheduler reads an admitted pod: a fraction wins over memory (it is parsed
   * second); values admission would have refused read as absent.
   */
  public static KaiGpuRequest of(Pod pod) {
    Map<String, String> a = annotations(pod);
    OptionalDouble fraction = Optional.ofNullable(a.get(KaiKeys.GPU_FRACTION)).flatMap(KaiGpuRequest::parseFraction)
        .map(OptionalDouble::of).orElse(OptionalDouble.empty());
    OptionalLong memory = fraction.isPresent() ? OptionalLong.empty()
        : Optional.ofNullable(a.get(KaiKeys.GPU_MEMORY)).flatMap(KaiGpuRequest::parseMemory).map(OptionalLong::of).orElse(OptionalLong.empty());
    int devices = Optional.ofNullable(a.get(KaiKeys.GPU_FRACTION_NUM_DEVICES)).flatMap(KaiGpuRequest::parseCount).orElse(1);
    long whole = 0;
    for (Container c : containers(pod)) {
      Quantity q = c.getResources() == null || c.getResources().getLimits() == null ? null : c.getResources().getLimits().get(GPU_RESOURCE);
      if (q != null) {
        whole += Quantity.getAmountInBytes(q).setScale(0, RoundingMode.CEILING).longValueExact();
      }
    }
    return new KaiGpuRequest(fraction, memory, devices, whole);
  }

  /** {@code 0 < f < 1}, also a valid quantity. */
  public static Optional<Double> parseFraction(String text) {
    try {
      BigDecimal amount = Quantity.getAmountInBytes(new Quantity(text.trim()));
      double f = amount.doubleValue();
      return f > 0 && f < 1 ? Optional.of(Double.parseDouble(text.trim())) : Optional.empty();
    } catch (IllegalArgumentException | ArithmeticException e) {
      return Optional.empty();
    }
  }

  /** A positive integer of MiB, no unit. */
  public static Optional<Long> parseMemory(String text) {
    try {
      long v = Long.parseUnsignedLong(text);
      return v > 0 && v <= Long.MAX_VALUE / 2 ? Optional.of(v) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /** A positive integer. */
  public static Optional<Integer> parseCount(String text) {
    try {
      int v = Integer.parseInt(text);
      return v > 0 ? Optional.of(v) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  private static boolean fractionalLimit(Pod pod) {
    for (Container c : containers(pod)) {
      Quantity q = c.getResources() == null || c.getResources().getLimits() == null ? null : c.getResources().getLimits().get(GPU_RESOURCE);
      if (q != null && Quantity.getAmountInBytes(q).stripTrailingZeros().scale() > 0) {
        return true;
      }
    }
    return false;
  }

  public static Map<String, String> annotations(Pod pod) {
    return pod.getMetadata() == null || pod.getMetadata().getAnnotations() == null ? Map.of() : pod.getMetadata().getAnnotations();
  }

  private static List<Container> containers(Pod pod) {
    List<Container> all = new ArrayList<>();
    if (pod.getSpec() != null) {
      Optional.ofNullable(pod.getSpec().getInitContainers()).ifPresent(all::addAll);
      Optional.ofNullable(pod.getSpec().getContainers()).ifPresent(all::addAll);
    }
    return all;
  }
}
