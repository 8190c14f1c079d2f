package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Reserve, release, restore and re-registration keep the ledger exact. */
class LedgerTest {

  private static PodGrant grant(String pod, String node, String uuid, int mem, int cores) {
    return new PodGrant(new PodRef("default", pod), node, List.of(), List.of(new ContainerGrant("c", List.of(new DeviceGrant(uuid, "NVIDIA", mem, cores)))));
  }

  @Test
  void aStaleFilterResultLosesToTheReservationThatWon() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant a = grant("a", "n1", uuid(0, 0), 30000, 0);
    PodGrant b = grant("b", "n1", uuid(0, 0), 30000, 0);
    assertThat(e.reserve(a).reserved()).isTrue();
    ReserveResult lost = e.reserve(b);
    assertThat(lost.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(lost.message()).isEqualTo("device " + uuid(0, 0) + " has 10960 MiB free, 30000 needed");
  }

  @Test
  void aPodHoldsOneGrant() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    assertThat(e.reserve(grant("a", "n1", uuid(0, 0), 1000, 0)).reserved()).isTrue();
    assertThat(e.reserve(grant("a", "n1", uuid(0, 0), 1000, 0)).status()).isEqualTo(ReserveResult.Status.ALREADY_RESERVED);
    assertThat(e.usage("n1").orElseThrow().devices().get(0).usedMemoryMiB()).isEqualTo(1000);
  }

  @Test
  void unknownNodeOrDeviceIsRefused() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    assertThat(e.reserve(grant("a", "ghost", uuid(0, 0), 1, 0)).status()).isEqualTo(ReserveResult.Status.UNKNOWN);
    assertThat(e.reserve(grant("a", "n1", "GPU-nope", 1, 0)).status()).isEqualTo(ReserveResult.Status.UNKNOWN);
    assertThat(e.grant(new PodRef("default", "a"))).isEmpty();
  }

  @Test
  void releaseReturnsUsageExactly() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.reserve(grant("a", "n1", uuid(0, 0), 1000, 10));
    assertThat(e.release(new PodRef("default", "a"))).isTrue();
    assertThat(e.release(new PodRef("default", "a"))).isFalse();
    DeviceUsage used = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(used.usedMemoryMiB()).isZero();
    assertThat(used.usedCores()).isZero();
    assertThat(used.sharers()).isZero();
  }

  @Test
  void restoreCountsEvenWhatNoLongerFitsAndWaitsForUnknownNodes() {
    Engine e = engine();
    assertThat(e.restore(grant("early", "n1", uuid(0, 0), 50000, 10)).reserved()).isTrue();
    e.upsertNode(node("n1", 0, 1));
    DeviceUsage used = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(used.usedMemoryMiB()).isEqualTo(50000);
    assertThat(used.sharers()).isEqualTo(1);
  }

  @Test
  void reRegistrationKeepsUsageAndAppliesNewCapacity() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    place(e, pod("p", gpu(1, 40000, 0)));
    e.upsertNode(NodeDevices.of("n1", List.of(new SchedulableDevice(uuid(0, 0), 0, A100, 81920, 100, 10, 0, true, "hami-core"))));
    DeviceUsage used = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(used.device().memoryMiB()).isEqualTo(81920);
    assertThat(used.usedMemoryMiB()).isEqualTo(40000);
    assertThat(e.filter(e.compile(pod("q", gpu(1, 40000, 0))), null, false).placement()).isPresent();
  }

  @Test
  void aNodeThatLeavesAndReturnsGetsItsUsageBack() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    place(e, pod("p", gpu(1, 40000, 0)));
    e.removeNode("n1");
    assertThat(e.nodeNames()).isEmpty();
    e.upsertNode(node("n1", 0, 1));
    assertThat(e.usage("n1").orElseThrow().devices().get(0).usedMemoryMiB()).isEqualTo(40000);
    e.release(new PodRef("default", "p"));
    assertThat(e.usage("n1").orElseThrow().devices().get(0).usedMemoryMiB()).isZero();
  }

  @Test
  void cordonAndHealthComeFromRegistration() {
    Engine e = engine();
    e.upsertNode(new NodeDevices("n1", List.of(card(uuid(0, 0), 0, 40960), card(uuid(0, 1), 1, 40960).withHealthy(false)), Set.of(uuid(0, 0))));
    List<DeviceUsage> devices = e.usage("n1").orElseThrow().devices();
    assertThat(devices.get(0).cordoned()).isTrue();
    assertThat(devices.get(1).device().healthy()).isFalse();
    assertThat(e.filter(e.compile(pod("p", gpu(1, 1, 0))), null, false).placement()).isEmpty();
  }

  @Test
  void holdersListThePodsOnACard() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    place(e, pod("b", gpu(1, 10, 0)));
    place(e, pod("a", gpu(1, 10, 0)));
    assertThat(e.holders("n1", uuid(0, 0))).containsExactly(new PodRef("default", "a"), new PodRef("default", "b"));
  }

  @Test
  void registrationFollowsHamisRules() {
    DeviceRegistrar registrar = new DeviceRegistrar("NVIDIA");
    var t4 = new io.vgpu.api.Device("GPU-t4", 1, "Tesla T4", 15360, 1, true, "");
    var registered = registrar.register(t4, io.vgpu.api.SharingConfig.DEFAULT.withMemoryScaling(2.0).withCoreScaling(1.5).withSplitCount(4));
    assertThat(registered).isEqualTo(new SchedulableDevice("GPU-t4", 1, "NVIDIA-Tesla T4", 30720, 150, 4, 1, true, "hami-core"));
    assertThat(registrar.typeOf("NVIDIA A100-SXM4-40GB")).isEqualTo("NVIDIA A100-SXM4-40GB");
  }

  @Test
  void devicesWithoutMemoryAreSkippedUnlessMemoryIsPreConfigured() {
    DeviceRegistrar registrar = new DeviceRegistrar("NVIDIA");
    var gb10 = new io.vgpu.api.Device("GPU-gb10", 0, "NVIDIA GB10", 0, 0, true, "");
    assertThat(registrar.register(List.of(gb10), io.vgpu.api.SharingConfig.DEFAULT)).isEmpty();
    assertThat(registrar.register(List.of(gb10), io.vgpu.api.SharingConfig.DEFAULT.withPreConfiguredMemoryMiB(100000)))
        .extracting(SchedulableDevice::memoryMiB).containsExactly(100000);
  }
}
