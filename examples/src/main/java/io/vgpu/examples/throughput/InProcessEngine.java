package io.vgpu.examples.throughput;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRequest;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodRequestParser;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The benchmark's cluster in an engine of this JVM, driven as the extender drives its own: each pod's
 * request parsed from the pod, compiled, filtered against every node with the details the extender
 * reports, reserved, and its allocation annotation encoded. No HTTP, JSON, API server or node lock: the
 * speed of the placement itself, beside which the end-to-end numbers are read.
 */
final class InProcessEngine {
  private final Engine engine;
  private final PodRequestParser parser;
  private final List<String> candidates = new ArrayList<>();

  /** An engine with the scheduler's configuration and {@code nodes} nodes of {@code cluster}. */
  InProcessEngine(DeviceConfig config, SyntheticCluster cluster, int nodes) {
    this.engine = Engine.builder().config(config.engineConfig()).build();
    this.parser = new PodRequestParser(config.schema());
    for (int i = 0; i < nodes; i++) {
      String name = SyntheticCluster.nodeName(i);
      engine.upsertNode(new NodeDevices(name, cluster.registered(i), Set.of()));
      candidates.add(name);
    }
  }

  /** Schedules one pod as the extender's filter does; the grant it reserved, if the pod fits. */
  Optional<PodGrant> schedule(Pod pod) {
    return schedule(pod, candidates);
  }

  /** Schedules one pod among {@code nodes} only (a cluster being filled need not scan every node per pod). */
  Optional<PodGrant> schedule(Pod pod, List<String> nodes) {
    PodRequest request = parser.parse(pod);
    CompiledRequest compiled = engine.compile(request);
    FilterResult result = engine.filter(compiled, nodes, true);
    if (result.placement().isEmpty()) {
      return Optional.empty();
    }
    PodGrant grant = result.placement().get().grant();
    if (!engine.reserve(grant).reserved()) {
      return Optional.empty();
    }
    DeviceListCodec.encode(grant);
    return Optional.of(grant);
  }

  /**
   * Counts a grant made elsewhere (a pod already running), as the scheduler's ledger restores it.
   *
   * @throws IllegalStateException when the grant does not fit
   */
  void hold(PodGrant grant) {
    var reserved = engine.reserve(grant);
    if (!reserved.reserved()) {
      throw new IllegalStateException("pod " + grant.pod() + " does not fit on " + grant.node() + ": " + reserved.message());
    }
  }

  /**
   * Schedules every pod in order.
   *
   * @return how many fit
   */
  int scheduleAll(List<Pod> pods) {
    int placed = 0;
    for (Pod pod : pods) {
      if (schedule(pod).isPresent()) {
        placed++;
      }
    }
    return placed;
  }
}
