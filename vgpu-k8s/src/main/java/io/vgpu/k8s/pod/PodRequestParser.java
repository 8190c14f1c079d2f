package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.ScoringWeights;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Turns a Pod into the engine's {@link PodRequest}: each container's extended resources (limits, falling
 * back to requests; init containers separately), the device constraints of {@code nvidia.com/use-gputype},
 * {@code nouse-gputype}, {@code use-gpuuuid}, {@code nouse-gpuuuid}, {@code numa-bind} and {@code
 * vgpu-mode}, and the policy choices of {@code hami.io/node-scheduler-policy}, {@code
 * hami.io/gpu-scheduler-policy} and {@code hami.io/device-scoring-weights}, and the pod's CPU request
 * ({@link PodCpu}), which policies that model CPU read.
 */
public final class PodRequestParser {
  private final ResourceSchema schema;

  /** A parser for one vendor's resource names. */
  public PodRequestParser(ResourceSchema schema) {
    this.schema = schema;
  }

  /**
   * Parses a pod; its namespace defaults to {@code default}.
   *
   * @throws PodRequestException when a resource is not a non-negative whole number, a CPU request not
   *     a non-negative quantity, or an annotation is invalid; the message names the container or
   *     annotation and the value
   */
  public PodRequest parse(Pod pod) {
    PodRef ref = PodRefs.of(pod);
    List<ContainerRequest> init = containers(pod.getSpec() == null ? null : pod.getSpec().getInitContainers());
    List<ContainerRequest> app = containers(pod.getSpec() == null ? null : pod.getSpec().getContainers());
    Map<String, String> annotations = PodRefs.annotations(pod);
    return new PodRequest(ref, init, app, constraints(annotations), overrides(annotations), PodCpu.requestMilli(pod));
  }

  /**
   * Whether the pod's spec asks for at least one device: some container, init or app, with a device
   * count above 0. Only the containers' resources are read, never an annotation, so a pod's owner
   * cannot change the answer after creating it.
   *
   * @throws PodRequestException when a count is not a non-negative whole number
   */
  public boolean asksForDevices(Pod pod) {
    for (Container c : PodRefs.containers(pod)) {
      if (amount(c, schema.countResource()) > 0) {
        return true;
      }
    }
    return false;
  }

  private List<ContainerRequest> containers(List<Container> containers) {
    List<ContainerRequest> out = new ArrayList<>();
    if (containers == null) {
      return out;
    }
    for (Container c : containers) {
      out.add(
          new ContainerRequest(
              nameOf(c),
              amount(c, schema.countResource()),
              amount(c, schema.memoryResource()),
              amount(c, schema.memoryPercentageResource()),
              amount(c, schema.coresResource())));
    }
    return out;
  }

  private static String nameOf(Container c) {
    return c.getName() == null ? "" : c.getName();
  }

  private static long amount(Container c, String resource) {
    BigDecimal value;
    try {
      value = ContainerResources.value(c, resource).orElse(null);
    } catch (IllegalArgumentException e) {
      throw new PodRequestException("container " + nameOf(c) + ": " + resource + " " + e.getMessage());
    }
    if (value == null) {
      return ContainerRequest.UNSET;
    }
    if (value.signum() < 0 || !Quantities.isInteger(value)) {
      throw new PodRequestException(
          "container " + nameOf(c) + ": " + resource + " " + value.toPlainString() + " is not a non-negative whole number");
    }
    try {
      return value.longValueExact();
    } catch (ArithmeticException e) {
      throw new PodRequestException("container " + nameOf(c) + ": " + resource + " " + value.toPlainString() + " is too large");
    }
  }

  private static DeviceConstraints constraints(Map<String, String> annotations) {
    return new DeviceConstraints(
        list(annotations.get(HamiAnnotations.USE_GPU_TYPE)),
        list(annotations.get(HamiAnnotations.NOUSE_GPU_TYPE)),
        list(annotations.get(HamiAnnotations.USE_GPU_UUID)),
        list(annotations.get(HamiAnnotations.NOUSE_GPU_UUID)),
        goParseBool(annotations.get(HamiAnnotations.NUMA_BIND)),
        annotations.getOrDefault(HamiAnnotations.VGPU_MODE, ""));
  }

  private static List<String> list(String value) {
    return value == null ? List.of() : Arrays.asList(value.split(",", -1));
  }

  /** Go's {@code strconv.ParseBool}: anything it does not accept as true counts as false here. */
  private static boolean goParseBool(String value) {
    return value != null && List.of("1", "t", "T", "TRUE", "true", "True").contains(value);
  }

  private static PolicyOverrides overrides(Map<String, String> annotations) {
    String weights = annotations.get(HamiAnnotations.DEVICE_SCORING_WEIGHTS);
    return new PolicyOverrides(
        annotations.getOrDefault(HamiAnnotations.NODE_SCHEDULER_POLICY, ""),
        annotations.getOrDefault(HamiAnnotations.GPU_SCHEDULER_POLICY, ""),
        weights == null ? ScoringWeights.DEFAULT : ScoringWeightsAnnotation.parse(weights));
  }
}
