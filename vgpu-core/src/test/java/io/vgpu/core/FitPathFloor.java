package io.vgpu.core;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PlacementView;
import java.util.ArrayList;
import java.util.List;

/**
 * The floor under the engine's filter, for vgpu-bench's fit-path benchmark: one tight pass over the
 * very per-device arrays {@link Engine#filter} scans, reading every field the fit rule reads (flags,
 * sharers, split count, total and used memory, total and used compute, type), once.
 *
 * <p>Test code, shipped in vgpu-core's test-jar; the engine carries no hook for it. It finds the
 * engine's node snapshots through the public placement-policy SPI: an engine built with {@link
 * #provider()} hands them to that policy when a pod asking for it is filtered.
 */
public final class FitPathFloor {
  /** Fields per device the fit rule reads. */
  public static final int FIELDS_READ = 8;

  /** The name of the policy that collects the snapshots. */
  public static final String POLICY = "fit-path-floor";

  private final int[][] devices;
  private final long deviceCount;

  private FitPathFloor(int[][] devices, long deviceCount) {
    this.devices = devices;
    this.deviceCount = deviceCount;
  }

  /** The policy to register with {@link Engine.Builder#policy} so that {@link #of} can see the snapshots. */
  public static PlacementPolicyProvider provider() {
    return new Collector();
  }

  /**
   * The floor over the engine's current node snapshots, in registration order.
   *
   * @throws IllegalStateException when the engine was not built with {@link #provider()}, or a node
   *     has no card with a MiB and a core free (the collecting pod fits nowhere there)
   */
  public static FitPathFloor of(Engine engine) {
    PodRequest probe =
        PodRequest.of(new PodRef("fit-path-floor", "probe"), List.of(new ContainerRequest("c", 1, 1, ContainerRequest.UNSET, 1)))
            .withOverrides(new PolicyOverrides("", POLICY, ScoringWeights.DEFAULT));
    CompiledRequest request = engine.compile(probe);
    if (!(request.policy() instanceof Collector.Collecting collecting)) {
      throw new IllegalStateException("the engine was built without FitPathFloor.provider()");
    }
    List<NodeState> seen = collecting.collect(engine, request);
    if (seen.size() != engine.nodeNames().size()) {
      throw new IllegalStateException("the floor saw " + seen.size() + " of " + engine.nodeNames().size() + " nodes");
    }
    int[][] devices = new int[seen.size()][];
    long count = 0;
    for (int i = 0; i < devices.length; i++) {
      devices[i] = seen.get(i).data;
      count += seen.get(i).deviceCount;
    }
    return new FitPathFloor(devices, count);
  }

  /** Reads every fit-relevant field of every device once and folds them into one value. */
  public long scan() {
    long fold = 0;
    for (int[] data : devices) {
      for (int base = 0; base < data.length; base += NodeState.STRIDE) {
        fold += data[base + NodeState.FLAGS]
            ^ data[base + NodeState.SHARERS]
            ^ data[base + NodeState.SPLIT]
            ^ data[base + NodeState.TOTAL_MEM]
            ^ data[base + NodeState.USED_MEM]
            ^ data[base + NodeState.TOTAL_CORES]
            ^ data[base + NodeState.USED_CORES]
            ^ data[base + NodeState.TYPE];
      }
    }
    return fold;
  }

  /** Bytes one {@link #scan} reads: 4 per field read, {@link #FIELDS_READ} per device. */
  public long bytesPerScan() {
    return deviceCount * FIELDS_READ * Integer.BYTES;
  }

  /** Registers the collecting policy. */
  private static final class Collector implements PlacementPolicyProvider {
    @Override
    public String name() {
      return POLICY;
    }

    @Override
    public PlacementPolicy create() {
      return new Collecting();
    }

    /** Scores every node 0 and, while collecting, keeps the snapshot the engine scores. */
    static final class Collecting extends IndexOrderPolicy {
      private List<NodeState> sink;

      Collecting() {
        super(POLICY);
      }

      synchronized List<NodeState> collect(Engine engine, CompiledRequest request) {
        sink = new ArrayList<>();
        try {
          engine.filter(request, null, false);
          return sink;
        } finally {
          sink = null;
        }
      }

      @Override
      public boolean scoresNodeUsageOnly() {
        return true;
      }

      @Override
      public double scoreNode(NodeView node, PlacementView placement) {
        List<NodeState> out = sink;
        if (out != null && node instanceof NodeState state) {
          out.add(state);
        }
        return 0;
      }
    }
  }
}
