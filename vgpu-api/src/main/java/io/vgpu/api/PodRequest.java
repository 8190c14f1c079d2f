package io.vgpu.api;

import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Everything the scheduler needs to know about a pod to place it: its containers' requests (init
 * containers first, as they run) and its constraints and policy choices.
 *
 * @param pod the pod
 * @param initContainers requests of the init containers, in order
 * @param containers requests of the app containers, in order
 * @param constraints which devices the pod may use
 * @param overrides the pod's own policy choices
 * @param cpuMilli the CPU the pod requests in millicores, as Kubernetes counts it when it places the
 *     pod (the app containers' sum or the largest init container, whichever is more, plus overhead),
 *     or {@link #CPU_UNKNOWN}; policies that model CPU read it, the fit rules do not
 * @param queue the leaf queue the pod is charged to (KAI Scheduler's {@code kai.scheduler/queue}), or
 *     {@code null} when it belongs to none; a queue's limit is checked when the pod is reserved
 */
public record PodRequest(
    PodRef pod,
    List<ContainerRequest> initContainers,
    List<ContainerRequest> containers,
    DeviceConstraints constraints,
    PolicyOverrides overrides,
    long cpuMilli,
    @Nullable String queue) {

  /** Marks a request whose CPU is not known. */
  public static final long CPU_UNKNOWN = -1;

  /** Copies the lists and validates the fields. */
  public PodRequest {
    Objects.requireNonNull(pod, "pod");
    initContainers = List.copyOf(initContainers);
    containers = List.copyOf(containers);
    Objects.requireNonNull(constraints, "constraints");
    Objects.requireNonNull(overrides, "overrides");
    if (cpuMilli < CPU_UNKNOWN) {
      throw new IllegalArgumentException("pod " + pod + ": cpu " + cpuMilli + " millicores is negative");
    }
    if (queue != null && queue.isEmpty()) {
      throw new IllegalArgumentException("pod " + pod + ": an empty queue name; use null for none");
    }
  }

  /** A request in no queue. */
  public PodRequest(
      PodRef pod, List<ContainerRequest> initContainers, List<ContainerRequest> containers, DeviceConstraints constraints, PolicyOverrides overrides, long cpuMilli) {
    this(pod, initContainers, containers, constraints, overrides, cpuMilli, null);
  }

  /** A request whose CPU is not known. */
  public PodRequest(
      PodRef pod, List<ContainerRequest> initContainers, List<ContainerRequest> containers, DeviceConstraints constraints, PolicyOverrides overrides) {
    this(pod, initContainers, containers, constraints, overrides, CPU_UNKNOWN);
  }

  /** A pod with app containers only, no constraints and no overrides. */
  public static PodRequest of(PodRef pod, List<ContainerRequest> containers) {
    return new PodRequest(pod, List.of(), containers, DeviceConstraints.NONE, PolicyOverrides.NONE);
  }

  /** Whether any container asks for a device. */
  public boolean wantsDevices() {
    for (ContainerRequest c : initContainers) {
      if (c.wantsDevices()) {
        return true;
      }
    }
    for (ContainerRequest c : containers) {
      if (c.wantsDevices()) {
        return true;
      }
    }
    return false;
  }

  /** Returns a copy with other constraints. */
  public PodRequest withConstraints(DeviceConstraints value) {
    return new PodRequest(pod, initContainers, containers, value, overrides, cpuMilli, queue);
  }

  /** Returns a copy with other overrides. */
  public PodRequest withOverrides(PolicyOverrides value) {
    return new PodRequest(pod, initContainers, containers, constraints, value, cpuMilli, queue);
  }

  /** Returns a copy with init containers. */
  public PodRequest withInitContainers(List<ContainerRequest> value) {
    return new PodRequest(pod, value, containers, constraints, overrides, cpuMilli, queue);
  }

  /** Returns a copy requesting {@code value} millicores of CPU ({@link #CPU_UNKNOWN} when not known). */
  public PodRequest withCpuMilli(long value) {
    return new PodRequest(pod, initContainers, containers, constraints, overrides, value, queue);
  }

  /** Returns a copy charged to {@code value}, a leaf queue ({@code null}: none). */
  public PodRequest withQueue(@Nullable String value) {
    return new PodRequest(pod, initContainers, containers, constraints, overrides, cpuMilli, value);
  }
}
