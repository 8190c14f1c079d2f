package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.PlacementPolicyProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The filter's fast path (usage-only policies: roomiest card first, then a scan in any order) must
 * find exactly the nodes the full fit walk finds.
 */
class FastPathAgreementTest {
  /** A policy the engine cannot take the fast path for: it claims to need every placement. */
  private static final PlacementPolicyProvider FULL_WALK = Fixtures.inIndexOrder("full-walk", demand -> {});

  @Test
  void fastAndFullFitsAgreeOnRandomClusters() {
    SplittableRandom random = new SplittableRandom(11);
    for (int round = 0; round < 100; round++) {
      Engine engine = Engine.builder().loadPoliciesFromClassPath(false).policy(FULL_WALK).build();
      List<String> names = new ArrayList<>();
      for (int n = 0; n < 12; n++) {
        String name = "n" + n;
        names.add(name);
        engine.upsertNode(node(name, n, random));
        fill(engine, name, n, random);
      }
      for (int probe = 0; probe < 10; probe++) {
        ContainerRequest container = request(random);
        DeviceConstraints types =
            switch (random.nextInt(3)) {
              case 0 -> DeviceConstraints.NONE.withTypes(List.of("A100"), List.of());
              case 1 -> DeviceConstraints.NONE.withTypes(List.of(), List.of("T4"));
              default -> DeviceConstraints.NONE;
            };
        PodRequest fast = pod("probe", container, random.nextBoolean() ? "spread" : "binpack").withConstraints(types);
        PodRequest full = pod("probe", container, "full-walk").withConstraints(types);
        assertThat(fitting(engine, fast)).as("round %d probe %s", round, container).isEqualTo(fitting(engine, full));
      }
    }
  }

  private static Set<String> fitting(Engine engine, PodRequest request) {
    return Set.copyOf(engine.filter(engine.compile(request), null, true).fitting().stream().map(FilterResult.NodeScore::node).toList());
  }

  /** Edge values matter most: no compute, whole cards, and amounts in between. */
  private static final int[] CORES = {0, 0, 25, 50, 70, 100, 100};

  private static ContainerRequest request(SplittableRandom random) {
    long count = 1 + random.nextInt(3);
    long cores = CORES[random.nextInt(CORES.length)];
    return switch (random.nextInt(4)) {
      case 0 -> new ContainerRequest("c", count, ContainerRequest.UNSET, ContainerRequest.UNSET, ContainerRequest.UNSET);
      case 1 -> new ContainerRequest("c", count, ContainerRequest.UNSET, 10 + random.nextInt(91), cores);
      case 2 -> new ContainerRequest("c", count, 1024L * (1 + random.nextInt(40)), ContainerRequest.UNSET, 0);
      default -> new ContainerRequest("c", count, 1024L * (1 + random.nextInt(40)), ContainerRequest.UNSET, cores);
    };
  }

  private static PodRequest pod(String name, ContainerRequest container, String devicePolicy) {
    return PodRequest.of(new PodRef("default", name), List.of(container))
        .withOverrides(new PolicyOverrides("binpack", devicePolicy, ScoringWeights.DEFAULT));
  }

  private static NodeDevices node(String name, int number, SplittableRandom random) {
    List<SchedulableDevice> cards = new ArrayList<>();
    int count = 1 + random.nextInt(8);
    for (int i = 0; i < count; i++) {
      String type = random.nextInt(3) == 0 ? "NVIDIA T4" : Fixtures.A100;
      cards.add(new SchedulableDevice(Fixtures.uuid(number, i), i, type, 40_960, 100, 1 + random.nextInt(4), 0, random.nextInt(8) != 0, "hami-core"));
    }
    return NodeDevices.of(name, cards);
  }

  /** Restores random grants on random cards of the node, whatever they add up to. */
  private static void fill(Engine engine, String name, int number, SplittableRandom random) {
    NodeUsage usage = engine.usage(name).orElseThrow();
    int pods = random.nextInt(6);
    for (int p = 0; p < pods; p++) {
      int card = random.nextInt(usage.devices().size());
      int memory = 1024 * random.nextInt(41);
      int cores = CORES[random.nextInt(CORES.length)];
      DeviceGrant device = new DeviceGrant(Fixtures.uuid(number, card), "NVIDIA", memory, cores);
      engine.restore(
          new PodGrant(
              new PodRef("default", name + "-p" + p),
              name,
              List.of(),
              List.of(new io.vgpu.api.ContainerGrant("c", List.of(device)))));
    }
  }
}
