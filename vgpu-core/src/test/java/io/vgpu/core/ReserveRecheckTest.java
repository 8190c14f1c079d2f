package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.api.ScoringWeights;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A reservation refuses exactly what a fresh filter would refuse: placements computed on the same
 * state and reserved one after the other (stale placements) must not add up to a card no filter
 * would have allowed.
 */
class ReserveRecheckTest {

  private static PodGrant filtered(Engine e, String name, long memoryMiB, long cores) {
    return e.filter(e.compile(pod(name, gpu(1, memoryMiB, cores))), null, false).placement().orElseThrow().grant();
  }

  @Test
  void anExclusivePodCannotJoinACardASharerReservedAfterBothWereFiltered() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant sharer = filtered(e, "a", 1000, 0);
    PodGrant exclusive = filtered(e, "b", 1000, 100);
    assertThat(e.reserve(sharer).reserved()).isTrue();
    ReserveResult second = e.reserve(exclusive);
    assertThat(second.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(second.message()).isEqualTo("device " + uuid(0, 0) + " already has 1 sharer: 100 cores need the card alone");
    DeviceUsage card = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(card.usedCores()).isZero();
    assertThat(card.sharers()).isEqualTo(1);
  }

  @Test
  void aZeroCorePodCannotJoinACardAnExclusivePodReservedAfterBothWereFiltered() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant sharer = filtered(e, "a", 1000, 0);
    PodGrant exclusive = filtered(e, "b", 1000, 100);
    assertThat(e.reserve(exclusive).reserved()).isTrue();
    ReserveResult second = e.reserve(sharer);
    assertThat(second.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(second.message()).isEqualTo("device " + uuid(0, 0) + " has all its compute allocated: a 0-core container may not join it");
    DeviceUsage card = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(card.usedCores()).isEqualTo(100);
    assertThat(card.sharers()).isEqualTo(1);
  }

  @Test
  void aCardCordonedAfterTheFilterIsRefused() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant grant = filtered(e, "a", 1000, 10);
    e.upsertNode(new NodeDevices("n1", node("n1", 0, 1).devices(), Set.of(uuid(0, 0))));
    ReserveResult result = e.reserve(grant);
    assertThat(result.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(result.message()).isEqualTo("device " + uuid(0, 0) + " is cordoned");
    assertThat(e.usage("n1").orElseThrow().devices().get(0).sharers()).isZero();
  }

  @Test
  void aCardThatTurnedUnhealthyAfterTheFilterIsRefused() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant grant = filtered(e, "a", 1000, 10);
    e.upsertNode(NodeDevices.of("n1", List.of(card(uuid(0, 0), 0, 40960).withHealthy(false))));
    ReserveResult result = e.reserve(grant);
    assertThat(result.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(result.message()).isEqualTo("device " + uuid(0, 0) + " is unhealthy");
  }

  @Test
  void aMutexPodsPlacementIsRefusedOnceAnotherPodSharesItsCard() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodRequest alone = pod("alone", gpu(1, 1000, 10)).withOverrides(new PolicyOverrides("", "mutex", ScoringWeights.DEFAULT));
    Placement placement = e.filter(e.compile(alone), null, false).placement().orElseThrow();
    place(e, pod("sharer", gpu(1, 1000, 10)));
    ReserveResult result = e.reserve(placement);
    assertThat(result.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(result.message()).isEqualTo("device " + uuid(0, 0) + " already has 1 sharer: the mutex policy needs an unshared card");
  }

  @Test
  void aPlacementOnACardReRegisteredAsATypeThePodAvoidsIsRefused() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodRequest noT4 = pod("p", gpu(1, 1000, 10)).withConstraints(DeviceConstraints.NONE.withTypes(List.of(), List.of("T4")));
    Placement placement = e.filter(e.compile(noT4), null, false).placement().orElseThrow();
    e.upsertNode(NodeDevices.of("n1", List.of(new SchedulableDevice(uuid(0, 0), 0, "NVIDIA Tesla T4", 15360, 100, 10, 0, true, "hami-core"))));
    ReserveResult result = e.reserve(placement);
    assertThat(result.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(result.message()).isEqualTo("device " + uuid(0, 0) + " (NVIDIA Tesla T4, mode hami-core) is not of a type the pod accepts");
  }

  @Test
  void theFilterCountsAPodsQuotaAsTheReservationChargesIt() {
    // Init containers count at their per-card peak, app containers summed, a card the larger of the two.
    Engine e = engine("binpack", "binpack");
    e.upsertNode(node("n1", 0, 2));
    place(e, PodRequest.of(new PodRef("other", "holder"), List.of(gpu(1, 39000, 0))).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid(0, 0)), List.of())));
    e.setQuota("team", new QuotaLimits(3500, QuotaLimits.UNLIMITED));
    // Binpack tries the fuller card first: the init container fits only card 1, the app one both. On
    // card 0 the pod would cost 3000 (init, card 1) + 1000 (app, card 0) > 3500; on card 1, 3000.
    PodRequest pod =
        PodRequest.of(new PodRef("team", "p"), List.of(new ContainerRequest("app", 1, 1000, ContainerRequest.UNSET, 0)))
            .withInitContainers(List.of(new ContainerRequest("init", 1, 3000, ContainerRequest.UNSET, 0)));
    PodGrant grant = place(e, pod);
    assertThat(grant.containers().get(0).devices().get(0).uuid()).isEqualTo(uuid(0, 1));
    assertThat(e.quota("team").usedMemoryMiB()).isEqualTo(3000);
  }
}
