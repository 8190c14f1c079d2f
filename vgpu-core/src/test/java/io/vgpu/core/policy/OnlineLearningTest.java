package io.vgpu.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PodDemand;
import io.vgpu.core.Engine;
import io.vgpu.core.IndexOrderPolicy;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The deployed {@code vgpu} and {@code fgd} learn online what the benchmark's oracle is given: the
 * workload from the pods the engine counts (each once, with CPU and type constraints), and the cards of
 * each type from the registrations.
 */
class OnlineLearningTest {
  private static final String A100 = "NVIDIA A100-SXM4-40GB";
  private static final String T4 = "NVIDIA T4";
  private static final int CARD_MIB = 40_960;
  private static final CardDemand HALF = new CardDemand(1, 20_480, 0, 50);

  @Test
  void learnsEachReservedPodOnceWithItsCpuAndTheTypesItMayUse() {
    Engine engine = cluster();
    Placement typed = filter(engine, request("typed", 8_000, List.of("A100"), List.of()));
    assertThat(engine.reserve(typed).reserved()).isTrue();
    // A filter retried after a failed bind gives the reservation back and takes it again: still once.
    engine.release(typed.grant().pod());
    assertThat(engine.reserve(filter(engine, request("typed", 8_000, List.of("A100"), List.of()))).reserved()).isTrue();
    assertThat(engine.reserve(filter(engine, request("avoids-t4", 2_000, List.of(), List.of("t4")))).reserved()).isTrue();
    // Ruling out no registered type is no constraint at all.
    assertThat(engine.reserve(filter(engine, request("any", 3_000, List.of(), List.of("H100")))).reserved()).isTrue();

    for (String name : List.of("vgpu", "fgd")) {
      TargetWorkload learned = workloadOf(engine, name);
      assertThat(learned.classes())
          .as(name)
          .containsExactlyInAnyOrder(
              new WorkloadClass(8_000, HALF, List.of(A100)), new WorkloadClass(2_000, HALF, List.of(A100)), new WorkloadClass(3_000, HALF, List.of()));
      for (int c = 0; c < 3; c++) {
        assertThat(learned.weight(c)).isEqualTo(1.0 / 3);
      }
    }
  }

  @Test
  void aRestoredPodIsLearnedWithTheCpuItWasReportedWith() {
    Engine engine = cluster();
    PodRef running = new PodRef("default", "running");
    engine.setPodCpu(running, "a100", 12_000);
    PodGrant grant = new PodGrant(running, "a100", List.of(), List.of(new ContainerGrant("c", List.of(new DeviceGrant("a100-0", "NVIDIA", 20_480, 50)))));
    assertThat(engine.restore(grant).reserved()).isTrue();
    assertThat(workloadOf(engine, "vgpu").classes()).containsExactly(new WorkloadClass(12_000, HALF, List.of()));
    // Its CPU per card share: 12 cores for half a card.
    assertThat(workloadOf(engine, "vgpu").cpuPerCardShare()).isEqualTo(12_000 / 500.0);
  }

  @Test
  void typeContentionFollowsTheRegisteredCards() {
    Engine engine = cluster();
    VgpuPolicy vgpu = (VgpuPolicy) engine.compile(request("probe", 0, List.of(), List.of())).policy();
    assertThat(vgpu.contention(A100)).isZero();
    // Half the demand insists on A100 cards, which are half the cluster's cards: it wants all of them.
    assertThat(engine.reserve(filter(engine, request("typed", 1_000, List.of("A100"), List.of()))).reserved()).isTrue();
    assertThat(engine.reserve(filter(engine, request("free", 1_000, List.of(), List.of()))).reserved()).isTrue();
    assertThat(vgpu.contention(A100)).isEqualTo(1.0);
    assertThat(vgpu.contention(T4)).isZero();
    // Another A100 node: they are now two thirds of the cards, and half the demand wants them.
    engine.upsertNode(node("a100-b", A100, 2));
    assertThat(engine.cardsByType()).isEqualTo(Map.of(A100, 4L, T4, 2L));
    assertThat(vgpu.contention(A100)).isEqualTo(0.75);
    engine.removeNode("a100-b");
    assertThat(engine.cardsByType()).isEqualTo(Map.of(A100, 2L, T4, 2L));
    assertThat(vgpu.contention(A100)).isEqualTo(1.0);
  }

  @Test
  void policiesHearOfRegistrationsWhenTheCountsChangeOnly() {
    List<Map<String, Long>> heard = new CopyOnWriteArrayList<>();
    Engine engine = Engine.builder().loadPoliciesFromClassPath(false).policy(listening(heard)).build();
    engine.upsertNode(node("a", A100, 2));
    engine.upsertNode(node("a", A100, 2)); // the same registration again
    engine.upsertNode(node("t", T4, 1));
    engine.upsertNode(node("a", A100, 3)); // a card more
    engine.removeNode("t");
    assertThat(heard)
        .containsExactly(Map.of(), Map.of(A100, 2L), Map.of(A100, 2L, T4, 1L), Map.of(A100, 3L, T4, 1L), Map.of(A100, 3L));
  }

  private static TargetWorkload workloadOf(Engine engine, String policy) {
    PlacementPolicy p = engine.compile(request("probe", 0, List.of(), List.of()).withOverrides(overrides(policy))).policy();
    return p instanceof VgpuPolicy v ? v.workload() : ((FgdPolicy) p).workload();
  }

  /** One node of two A100 cards and one of two T4 cards, CPU modelled. */
  private static Engine cluster() {
    Engine engine = Engine.create();
    engine.upsertNode(node("a100", A100, 2));
    engine.upsertNode(node("t4", T4, 2));
    engine.setNodeCpu("a100", 64_000);
    engine.setNodeCpu("t4", 64_000);
    return engine;
  }

  private static NodeDevices node(String name, String type, int cards) {
    List<SchedulableDevice> devices = new ArrayList<>();
    for (int i = 0; i < cards; i++) {
      devices.add(new SchedulableDevice(name + "-" + i, i, type, CARD_MIB, 100, 10, 0, true, "hami-core"));
    }
    return NodeDevices.of(name, devices);
  }

  private static PolicyOverrides overrides(String policy) {
    return new PolicyOverrides("", policy, ScoringWeights.DEFAULT);
  }

  private static PodRequest request(String name, long cpuMilli, List<String> use, List<String> avoid) {
    return new PodRequest(
        new PodRef("default", name),
        List.of(),
        List.of(new ContainerRequest("c", 1, 20_480, ContainerRequest.UNSET, 50)),
        DeviceConstraints.NONE.withTypes(use, avoid),
        overrides("vgpu"),
        cpuMilli);
  }

  private static Placement filter(Engine engine, PodRequest request) {
    return engine.filter(engine.compile(request), null, false).placement().orElseThrow();
  }

  private static PlacementPolicyProvider listening(List<Map<String, Long>> heard) {
    return IndexOrderPolicy.provider("listening", () -> new IndexOrderPolicy("listening") {
      @Override
      public void observe(PodDemand pod) {}

      @Override
      public void cardTypesRegistered(Map<String, Long> cardsByType) {
        heard.add(cardsByType);
      }
    });
  }
}
