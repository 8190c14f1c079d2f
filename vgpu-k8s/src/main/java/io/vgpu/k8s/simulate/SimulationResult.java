package io.vgpu.k8s.simulate;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.QuotaUsage;
import io.vgpu.core.Waiting;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The final state of a replayed scenario: every pod created and not deleted, what each event scheduled,
 * every node's devices with their usage, and the quota usage of namespaces that have a quota.
 *
 * @param pods the pods, in creation order
 * @param timeline one step per event, in order
 * @param nodes the nodes, in file order
 * @param quotas namespaces with a quota, by name
 * @param queues KAI queues that exist at the end, in creation order, with their division
 */
public record SimulationResult(List<PodOutcome> pods, List<Step> timeline, List<NodeOutcome> nodes, List<QuotaUsage> quotas, List<QueueOutcome> queues) {

  /** Copies the lists. */
  public SimulationResult {
    pods = List.copyOf(pods);
    timeline = List.copyOf(timeline);
    nodes = List.copyOf(nodes);
    quotas = List.copyOf(quotas);
    queues = List.copyOf(queues);
  }

  /**
   * One queue after the last event: KAI's division of each resource ({@link
   * io.vgpu.core.queue.ResourceDivision}).
   *
   * @param name the queue
   * @param parent its parent queue, if any
   * @param shares per resource: deserved, requested, allocated, fair share and limit
   */
  public record QueueOutcome(String name, Optional<String> parent, Map<QueueResource, QueueShare> shares) {
    /** Copies the map. */
    public QueueOutcome {
      shares = Collections.unmodifiableMap(new EnumMap<>(shares));
    }
  }

  /**
   * One pod's final state.
   *
   * @param pod the pod
   * @param phase Running, Pending or Rejected
   * @param node the node it runs on, empty unless Running
   * @param annotations the annotations the scheduler wrote (without {@code hami.io/vgpu-time})
   * @param initContainers the init containers' devices, when Running
   * @param containers the app containers' devices, when Running
   * @param reasons when Pending: per node in file order, why the pod does not fit there
   * @param message when Rejected: the webhook's message; when Pending without reasons: why the scheduler
   *     could not evaluate it
   * @param waiting when Pending for a reason of the pod rather than of the nodes (its queue is missing or
   *     at its limit, its gang incomplete)
   * @param gpuPortion for a running pod that holds a card portion (KAI's {@code gpu-fraction} or {@code
   *     gpu-memory}): the portion of each card, in hundredths
   */
  public record PodOutcome(
      PodRef pod,
      Phase phase,
      String node,
      Map<String, String> annotations,
      List<ContainerOutcome> initContainers,
      List<ContainerOutcome> containers,
      Map<String, String> reasons,
      String message,
      Optional<Waiting> waiting,
      OptionalInt gpuPortion) {
    /** Copies the collections, keeping their order. */
    public PodOutcome {
      annotations = Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
      initContainers = List.copyOf(initContainers);
      containers = List.copyOf(containers);
      reasons = Collections.unmodifiableMap(new LinkedHashMap<>(reasons));
    }
  }

  /**
   * What one container got.
   *
   * @param name the container
   * @param devices its devices, in the order it sees them
   * @param env the environment the container contract gives it; empty when no contract is installed
   */
  public record ContainerOutcome(String name, List<DeviceGrant> devices, Map<String, String> env) {
    /** Copies the collections. */
    public ContainerOutcome {
      devices = List.copyOf(devices);
      env = Collections.unmodifiableMap(new LinkedHashMap<>(env));
    }
  }

  /**
   * One event and the pods that became Running because of it.
   *
   * @param step the event's position, from 0
   * @param event the event, e.g. {@code delete default/p1}
   * @param scheduled the pods that became Running, in the order they were placed
   */
  public record Step(int step, String event, List<PodRef> scheduled) {
    /** Copies the list. */
    public Step {
      scheduled = List.copyOf(scheduled);
    }
  }

  /**
   * A node's devices at the end.
   *
   * @param name the node
   * @param devices its devices in registration order; empty for a node without GPUs
   */
  public record NodeOutcome(String name, List<DeviceOutcome> devices) {
    /** Copies the list. */
    public NodeOutcome {
      devices = List.copyOf(devices);
    }
  }

  /**
   * One device: its product name and its capacity and usage as the scheduler sees them.
   *
   * @param model the product name as NVML reports it
   * @param usage the registered capacity (after scaling) and the ledger's usage
   */
  public record DeviceOutcome(String model, DeviceUsage usage) {}
}
