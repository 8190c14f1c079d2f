package io.vgpu.k8s.pod;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The CPU a pod requests, in millicores, as kube-scheduler counts it when it places the pod: the app
 * containers' requests summed, or the largest init container's (plus the restartable "sidecar" init
 * containers started before it), whichever is more, with the sidecars themselves added to the app
 * containers; then the pod's overhead. A container without a CPU request counts its CPU limit (the API
 * server copies a lone limit into the request); one with neither counts 0. Fractions of a millicore
 * round up, as Kubernetes rounds them.
 */
public final class PodCpu {
  private static final String CPU = "cpu";
  private static final BigDecimal MILLI = BigDecimal.valueOf(1000);

  private PodCpu() {}

  /**
   * The pod's CPU request in millicores.
   *
   * @throws PodRequestException when a CPU quantity is not a non-negative quantity or the sum is too
   *     large; the message names the container and the value
   */
  public static long requestMilli(Pod pod) {
    PodSpec spec = pod.getSpec();
    if (spec == null) {
      return 0;
    }
    long app = 0;
    for (Container c : list(spec.getContainers())) {
      app = add(app, containerMilli(c));
    }
    long sidecars = 0;
    long init = 0;
    for (Container c : list(spec.getInitContainers())) {
      long milli = containerMilli(c);
      if ("Always".equals(c.getRestartPolicy())) {
        app = add(app, milli);
        sidecars = add(sidecars, milli);
        init = Math.max(init, sidecars);
      } else {
        init = Math.max(init, add(milli, sidecars));
      }
    }
    long total = Math.max(app, init);
    Map<String, Quantity> overhead = spec.getOverhead();
    if (overhead != null && overhead.get(CPU) != null) {
      total = add(total, milli("pod overhead", overhead.get(CPU)));
    }
    return total;
  }

  private static long containerMilli(Container c) {
    Quantity request = ContainerResources.requests(c).get(CPU);
    Quantity value = request != null ? request : ContainerResources.limits(c).get(CPU);
    return value == null ? 0 : milli("container " + (c.getName() == null ? "" : c.getName()), value);
  }

  private static long milli(String where, Quantity quantity) {
    BigDecimal cores;
    try {
      cores = Quantities.parse(quantity.toString());
    } catch (IllegalArgumentException e) {
      throw new PodRequestException(where + ": cpu " + e.getMessage());
    }
    if (cores.signum() < 0) {
      throw new PodRequestException(where + ": cpu " + quantity + " is negative");
    }
    try {
      return cores.multiply(MILLI).setScale(0, RoundingMode.CEILING).longValueExact();
    } catch (ArithmeticException e) {
      throw new PodRequestException(where + ": cpu " + quantity + " is too large");
    }
  }

  private static long add(long a, long b) {
    try {
      return Math.addExact(a, b);
    } catch (ArithmeticException e) {
      throw new PodRequestException("the pod's cpu requests add up to more than " + Long.MAX_VALUE + " millicores");
    }
  }

  private static List<Container> list(@Nullable List<Container> containers) {
    return containers == null ? List.of() : containers;
  }
}
