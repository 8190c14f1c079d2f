package io.vgpu.bench;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The cluster the JMH benchmarks run against: nodes of 8 A100-40GB cards, each filled to about half by
 * a seeded mix of sharing and whole-card pods, every one placed and reserved through the engine.
 */
final class BenchCluster {
  static final int CARDS_PER_NODE = 8;
  static final int CARD_MIB = 40_960;
  static final String CARD_TYPE = "NVIDIA A100-SXM4-40GB";

  /** The pods the fill draws from: sharing pods of several sizes, one and two whole cards. */
  private static final long[][] MIX = {
    {1, 4_096, 10}, {1, 10_240, 25}, {1, 20_480, 50}, {1, 8_192, 30}, {1, CARD_MIB, 100}, {2, CARD_MIB, 100},
  };

  private BenchCluster() {}

  /**
   * An engine with {@code nodes} nodes about half used. With {@code policies}, the registered
   * placement policies are loaded too, and the fragmentation-aware ones learn the workload from the
   * fill pods the engine reserves; {@code extra} policies are added.
   */
  static Engine halfUsed(int nodes, boolean policies, long seed, PlacementPolicyProvider... extra) {
    Engine.Builder builder = Engine.builder().loadPoliciesFromClassPath(policies);
    for (PlacementPolicyProvider provider : extra) {
      builder.policy(provider);
    }
    Engine engine = builder.build();
    for (int n = 0; n < nodes; n++) {
      engine.upsertNode(node(n));
    }
    SplittableRandom random = new SplittableRandom(seed);
    int pod = 0;
    for (int n = 0; n < nodes; n++) {
      String name = nodeName(n);
      // Each node gets pods until about half its memory is used, some nodes more, some less.
      long target = (long) (CARDS_PER_NODE * CARD_MIB * (0.3 + 0.4 * random.nextDouble()));
      long used = 0;
      while (used < target) {
        long[] shape = MIX[random.nextInt(MIX.length)];
        PodRequest request = pod("fill-" + pod++, shape, random.nextBoolean() ? "binpack" : "spread");
        FilterResult result = engine.filter(engine.compile(request), List.of(name), false);
        if (result.placement().isEmpty() || !engine.reserve(result.placement().get()).reserved()) {
          break;
        }
        used += shape[0] * shape[1];
      }
    }
    // Settle the heap as a scheduler's is once it has run a while: the filling left every node's
    // snapshot wherever its last update was allocated, scattered through a large young generation,
    // which doubles the scan's cost (see the README's note on layout).
    System.gc();
    return engine;
  }

  /** A one-container pod of the given shape (cards, MiB per card, cores per card) under a device policy. */
  static PodRequest pod(String name, long[] shape, String devicePolicy) {
    ContainerRequest container = new ContainerRequest("main", shape[0], shape[1], ContainerRequest.UNSET, shape[2]);
    return PodRequest.of(new PodRef("bench", name), List.of(container))
        .withOverrides(new PolicyOverrides(devicePolicy, devicePolicy, ScoringWeights.DEFAULT));
  }

  /** The request the filter benchmarks place: one card, 8 GiB, 30% of its compute. */
  static PodRequest probe(String policy) {
    return pod("probe", PROBE, policy);
  }

  static final long[] PROBE = {1, 8_192, 30};

  static String nodeName(int n) {
    return String.format("node-%05d", n);
  }

  private static NodeDevices node(int n) {
    List<SchedulableDevice> cards = new ArrayList<>(CARDS_PER_NODE);
    for (int i = 0; i < CARDS_PER_NODE; i++) {
      String uuid = String.format("GPU-%08x-0000-0000-0000-%012x", n, i);
      cards.add(new SchedulableDevice(uuid, i, CARD_TYPE, CARD_MIB, 100, 10, i / 4, true, SchedulableDevice.MODE_SHARED));
    }
    return NodeDevices.of(nodeName(n), cards);
  }
}
