package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.PlacementPolicyProvider;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Policies that learn the workload see each pod once, when its grant is reserved or restored: not
 * every filter call (retries, dry runs, pods that fit nowhere).
 */
class ObservedWorkloadTest {
  private final List<CardDemand> observed = new CopyOnWriteArrayList<>();

  private final PlacementPolicyProvider recording = Fixtures.inIndexOrder("recording", observed::add);

  private Engine engine() {
    Engine e = Engine.builder().loadPoliciesFromClassPath(false).policy(recording).build();
    e.upsertNode(node("n1", 0, 2));
    return e;
  }

  private static PodRequest recorded(String name, long memoryMiB, long cores) {
    return pod(name, gpu(1, memoryMiB, cores)).withOverrides(new PolicyOverrides("", "recording", ScoringWeights.DEFAULT));
  }

  @Test
  void filteringAloneTeachesNothing() {
    Engine e = engine();
    for (int retry = 0; retry < 5; retry++) {
      e.filter(e.compile(recorded("p", 1000, 10)), null, true);
      e.explain(e.compile(recorded("too-big", 50_000, 10)), null);
    }
    assertThat(observed).isEmpty();
  }

  @Test
  void aReservedPodIsObservedOnceEvenWhenReservedAgain() {
    Engine e = engine();
    CompiledRequest request = e.compile(recorded("p", 1000, 10));
    Placement placement = e.filter(request, null, false).placement().orElseThrow();
    assertThat(e.reserve(placement.grant()).reserved()).isTrue();
    // A filter retried after a failed bind gives the reservation back and takes it again.
    e.release(placement.grant().pod());
    assertThat(e.reserve(placement.grant()).reserved()).isTrue();
    assertThat(observed).containsExactly(new CardDemand(1, 1000, 0, 10));
  }

  @Test
  void aRestoredPodIsObservedOnceAndARefusedOneNotAtAll() {
    Engine e = engine();
    PodGrant running =
        new PodGrant(new PodRef("default", "running"), "n1", List.of(),
            List.of(new ContainerGrant("c", List.of(new DeviceGrant(uuid(0, 0), "NVIDIA", 2000, 20), new DeviceGrant(uuid(0, 1), "NVIDIA", 2000, 20)))));
    assertThat(e.restore(running).reserved()).isTrue();
    PodGrant refused =
        new PodGrant(new PodRef("default", "refused"), "n1", List.of(),
            List.of(new ContainerGrant("c", List.of(new DeviceGrant(uuid(0, 0), "NVIDIA", 50_000, 20)))));
    assertThat(e.reserve(refused).reserved()).isFalse();
    assertThat(observed).containsExactly(new CardDemand(2, 2000, 0, 20));
  }
}
