package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.vgpu.api.PodRef;
import io.vgpu.core.Engine;
import io.vgpu.k8s.pod.PodCpu;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestException;
import io.vgpu.k8s.pod.Quantities;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds the engine the cluster's CPU from the scheduler's node and pod informers, so that the placement
 * policies which model CPU (such as {@code vgpu}, which counts the idle cards a node's free CPU cannot
 * feed) see it: each node's allocatable CPU ({@link Engine#setNodeCpu}), and the CPU request of each pod
 * bound to a node, GPU pod or not, until it finishes or is deleted ({@link Engine#setPodCpu}). A pod the
 * extender reserved is counted by the engine itself from the reservation until its binding is seen
 * here. A CPU quantity that cannot be read (the API server validates them, so only a broken object)
 * counts as none, with one warning per pod.
 *
 * <p>Events only say which object changed: each is settled from the informer cache's current copy,
 * one at a time, so whatever order events and the start-up pass run in, the last one leaves the
 * engine matching the cache (as the ledger settles its own state).
 */
final class NodeCpuFeed {
  private static final Logger LOG = LoggerFactory.getLogger(NodeCpuFeed.class);
  private static final String CPU = "cpu";

  private final Engine engine;
  private final Function<String, Optional<Node>> nodes;
  private final Function<PodRef, Optional<Pod>> pods;
  private final Set<PodRef> warned = ConcurrentHashMap.newKeySet();

  /**
   * @param nodes the node informer cache's current copy of a node
   * @param pods the pod informer cache's current copy of a pod
   */
  NodeCpuFeed(Engine engine, Function<String, Optional<Node>> nodes, Function<PodRef, Optional<Pod>> pods) {
    this.engine = engine;
    this.nodes = nodes;
    this.pods = pods;
  }

  /** Brings one node's allocatable CPU in line with the cache. */
  synchronized void reconcileNode(String name) {
    Optional<Node> node = nodes.apply(name);
    engine.setNodeCpu(name, node.isEmpty() ? -1 : allocatableMilli(node.get()));
  }

  /** Brings one pod's CPU in line with the cache: counted on its node while bound and not finished. */
  synchronized void reconcilePod(PodRef ref) {
    Optional<Pod> pod = pods.apply(ref);
    if (pod.isEmpty()) {
      warned.remove(ref);
      engine.removePodCpu(ref);
      return;
    }
    String phase = pod.get().getStatus() == null ? null : pod.get().getStatus().getPhase();
    if ("Succeeded".equals(phase) || "Failed".equals(phase)) {
      engine.removePodCpu(ref);
      return;
    }
    String node = pod.get().getSpec() == null ? null : pod.get().getSpec().getNodeName();
    if (node == null || node.isEmpty()) {
      return;
    }
    long milli;
    try {
      milli = PodCpu.requestMilli(pod.get());
    } catch (PodRequestException e) {
      if (warned.add(ref)) {
        LOG.warn("pod {}: counting no cpu for it on node {}: {}", ref, node, e.getMessage());
      }
      milli = 0;
    }
    engine.setPodCpu(ref, node, milli);
  }

  /** The node's allocatable CPU in millicores, or -1 when it reports none that can be read. */
  private static long allocatableMilli(Node node) {
    String name = node.getMetadata().getName();
    Map<String, Quantity> allocatable = node.getStatus() == null ? null : node.getStatus().getAllocatable();
    Quantity cpu = allocatable == null ? null : allocatable.get(CPU);
    long milli = -1;
    if (cpu != null) {
      try {
        BigDecimal cores = Quantities.parse(cpu.toString());
        milli = cores.signum() < 0 ? -1 : cores.multiply(BigDecimal.valueOf(1000)).setScale(0, RoundingMode.FLOOR).longValueExact();
      } catch (IllegalArgumentException | ArithmeticException e) {
        LOG.warn("node {}: ignoring unreadable allocatable cpu '{}'", name, cpu);
      }
    }
    return milli;
  }

  /** The handler to add to the node informer. */
  ResourceEventHandler<Node> nodeHandler() {
    return new ReconcileOnEvent<Node>(node -> reconcileNode(node.getMetadata().getName()));
  }

  /** The handler to add to the pod informer. */
  ResourceEventHandler<Pod> podHandler() {
    return new ReconcileOnEvent<Pod>(pod -> reconcilePod(PodRefs.of(pod)));
  }
}
