package io.vgpu.core;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Tells the placement policies what the cluster runs ({@link PlacementPolicy#observe}): each pod once,
 * when its grant is reserved or restored, one demand per app container with devices. Filter calls
 * teach nothing, so retries, dry runs and pods that fit nowhere cannot crowd a learned workload's
 * window. Thread-safe.
 */
final class WorkloadFeed {
  /**
   * How many pods the feed remembers having told about. Larger than a learned workload's window (1024
   * demands), so a pod reserved again while still in that window (a filter retried after a failed
   * bind, a reaped reservation bound later) is not counted twice.
   */
  static final int REMEMBERED_PODS = 4096;

  private final List<PlacementPolicy> learners;
  private final PodRef[] recent = new PodRef[REMEMBERED_PODS];
  private final Set<PodRef> remembered = new HashSet<>();
  private int next;

  WorkloadFeed(List<PlacementPolicy> learners) {
    this.learners = List.copyOf(learners);
  }

  /**
   * A grant was just counted. {@code request} is what it was placed for, when the engine knows (a
   * restored grant has none, so its demands are read off the grant).
   */
  void counted(PodGrant grant, @Nullable CompiledRequest request) {
    if (learners.isEmpty() || !firstTime(grant.pod())) {
      return;
    }
    List<ContainerGrant> containers = grant.containers();
    for (int c = 0; c < containers.size(); c++) {
      List<DeviceGrant> devices = containers.get(c).devices();
      if (devices.isEmpty()) {
        continue;
      }
      CardDemand demand = request != null && c < request.appDemands.length ? request.appDemands[c] : null;
      if (demand == null) {
        demand = demandOf(devices);
      }
      for (PlacementPolicy learner : learners) {
        learner.observe(demand);
      }
    }
  }

  private synchronized boolean firstTime(PodRef pod) {
    if (!remembered.add(pod)) {
      return false;
    }
    PodRef evicted = recent[next];
    if (evicted != null) {
      remembered.remove(evicted);
    }
    recent[next] = pod;
    next = (next + 1) % recent.length;
    return true;
  }

  /** What one container's granted cards say it asked of each: the most memory and compute any got. */
  private static CardDemand demandOf(List<DeviceGrant> devices) {
    int memory = 0;
    int cores = 0;
    for (DeviceGrant d : devices) {
      memory = Math.max(memory, d.memoryMiB());
      cores = Math.max(cores, d.cores());
    }
    return new CardDemand(devices.size(), memory, 0, cores);
  }
}
