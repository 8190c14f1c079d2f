package io.vgpu.core.policy;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import io.vgpu.core.Engine;
import io.vgpu.core.EngineConfig;
import io.vgpu.core.NodeDevices;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The policies here are found by name through the engine, by configuration and per pod. */
class EngineSelectionTest {
  private static final int CARD_MIB = 40_960;

  @Test
  void registersEveryPolicyByName() {
    assertThat(Engine.create().placementPolicies()).contains("random", "bestfit", "fgd", "vgpu");
  }

  @Test
  void selectsThePolicyTheConfigurationNames() {
    Engine engine = Engine.builder().config(EngineConfig.DEFAULT.withPolicies("binpack", "fgd")).build();
    assertThat(engine.compile(pod("p", 20_480, 50)).policy().name()).isEqualTo("fgd");
  }

  @Test
  void aPodsDevicePolicyOverridesTheConfiguration() {
    Engine engine = Engine.builder().config(EngineConfig.DEFAULT.withPolicies("binpack", "fgd")).build();
    PodRequest request =
        pod("p", 20_480, 50).withOverrides(new PolicyOverrides("", "vgpu", ScoringWeights.DEFAULT));
    assertThat(engine.compile(request).policy().name()).isEqualTo("vgpu");
  }

  @Test
  void fragmentationPoliciesFillTheHalfUsedCardAndKeepWholeCardsFree() {
    for (String policy : List.of("fgd", "vgpu")) {
      Engine engine = Engine.builder().config(EngineConfig.DEFAULT.withPolicies("spread", policy)).build();
      engine.upsertNode(node("empty", 0));
      engine.upsertNode(node("half", 1));
      engine.upsertNode(node("busy", 2));
      PodGrant first = grant(engine, "first", "half", uuid(1, 1), 20_480, 50);
      assertThat(engine.reserve(first).reserved()).isTrue();

      // The policy learns whole-card and half-card pods from the grants the engine counts (here the
      // running whole-card pods a restarted scheduler restores). A half card on the empty node would
      // cost a whole-card slot; on the half-used card it closes a hole. Under spread, HAMi itself
      // would pick the empty node.
      for (int i = 0; i < 2; i++) {
        assertThat(engine.restore(grant(engine, "whole-" + i, "busy", uuid(2, i), CARD_MIB, 100)).reserved()).isTrue();
      }
      // Filter calls teach nothing: were these small pods retried against the full node counted, they
      // would crowd the whole-card pods out of the learned workload and the choice would tie.
      for (int i = 0; i < 100; i++) {
        engine.filter(engine.compile(pod("pending-" + i, 1_024, 5)), List.of("busy"), false);
      }
      var placement = engine.filter(engine.compile(pod("second", 20_480, 50)), null, false).placement().orElseThrow();

      assertThat(placement.node()).as(policy).isEqualTo("half");
      assertThat(placement.grant().containers().get(0).devices()).extracting(DeviceGrant::uuid).containsExactly(uuid(1, 1));
    }
  }

  private static PodRequest pod(String name, long memoryMiB, long cores) {
    return PodRequest.of(
        new PodRef("default", name), List.of(new ContainerRequest("main", 1, memoryMiB, ContainerRequest.UNSET, cores)));
  }

  private static NodeDevices node(String name, int number) {
    List<SchedulableDevice> cards = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      cards.add(new SchedulableDevice(uuid(number, i), i, "NVIDIA A100-SXM4-40GB", CARD_MIB, 100, 10, 0, true, "hami-core"));
    }
    return NodeDevices.of(name, cards);
  }

  private static String uuid(int node, int index) {
    return "GPU-" + node + "-" + index;
  }

  private static PodGrant grant(Engine engine, String pod, String node, String uuid, int memoryMiB, int cores) {
    return new PodGrant(
        new PodRef("default", pod),
        node,
        List.of(),
        List.of(new io.vgpu.api.ContainerGrant("main", List.of(new DeviceGrant(uuid, "NVIDIA", memoryMiB, cores)))));
  }
}
