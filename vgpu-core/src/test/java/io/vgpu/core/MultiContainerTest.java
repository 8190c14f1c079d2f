package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRequest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Several containers: app containers add up, init containers count at their peak. */
class MultiContainerTest {

  @Test
  void appContainersAddUpOnOneCard() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant grant = place(e, pod("p", gpu(1, 1000, 10), gpu(1, 2000, 20)));
    assertThat(grant.containers()).extracting(c -> c.devices().get(0).uuid()).containsExactly(uuid(0, 0), uuid(0, 0));
    DeviceUsage used = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(used.usedMemoryMiB()).isEqualTo(3000);
    assertThat(used.usedCores()).isEqualTo(30);
    assertThat(used.sharers()).isEqualTo(2);
  }

  @Test
  void underSpreadTheSecondContainerSeesTheFirst() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    PodGrant grant = place(e, pod("p", gpu(1, 1000, 10), gpu(1, 1000, 10)));
    assertThat(grant.containers()).extracting(c -> c.devices().get(0).uuid()).containsExactly(uuid(0, 0), uuid(0, 1));
  }

  @Test
  void containersWithoutDevicesKeepTheirPlace() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodGrant grant = place(e, pod("p", ContainerRequest.none("sidecar"), gpu(1, 1000, 10)));
    assertThat(grant.containers()).extracting(ContainerGrant::name).containsExactly("c0", "c1");
    assertThat(grant.containers().get(0).devices()).isEmpty();
    assertThat(grant.containers().get(1).devices()).hasSize(1);
  }

  @Test
  void initContainersCountAsTheirPeakNotTheirSum() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodRequest request =
        pod("p", gpu(1, 20000, 10))
            .withInitContainers(List.of(new ContainerRequest("init1", 1, 30000, ContainerRequest.UNSET, 50), new ContainerRequest("init2", 1, 25000, ContainerRequest.UNSET, 60)));
    PodGrant grant = place(e, request);
    assertThat(grant.initContainers()).extracting(c -> c.devices().get(0).memoryMiB()).containsExactly(30000, 25000);
    DeviceUsage used = e.usage("n1").orElseThrow().devices().get(0);
    assertThat(used.usedMemoryMiB()).isEqualTo(30000);
    assertThat(used.usedCores()).isEqualTo(60);
    assertThat(used.sharers()).isEqualTo(1);
  }

  @Test
  void initContainerBiggerThanAnyCardFiltersTheNode() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    PodRequest request = pod("p", gpu(1, 1000, 10)).withInitContainers(List.of(new ContainerRequest("init", 1, 50000, ContainerRequest.UNSET, 0)));
    assertThat(e.filter(e.compile(request), null, false).placement()).isEmpty();
  }

  @Test
  void initAndAppContainersDoNotSeeEachOther() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    // Init and app each need 30000 MiB of the 40960: they run at different times, so both fit.
    PodRequest request = pod("p", gpu(1, 30000, 0)).withInitContainers(List.of(new ContainerRequest("init", 1, 30000, ContainerRequest.UNSET, 0)));
    place(e, request);
    assertThat(e.usage("n1").orElseThrow().devices().get(0).usedMemoryMiB()).isEqualTo(30000);
  }

  @Test
  void collapseTakesTheLargerOfInitPeakAndAppSumPerCard() {
    PodGrant grant =
        new PodGrant(
            new io.vgpu.api.PodRef("default", "p"),
            "n1",
            List.of(new ContainerGrant("i", List.of(new DeviceGrant("A", "NVIDIA", 5000, 10)))),
            List.of(
                new ContainerGrant("a", List.of(new DeviceGrant("A", "NVIDIA", 2000, 30), new DeviceGrant("B", "NVIDIA", 100, 0))),
                new ContainerGrant("b", List.of(new DeviceGrant("A", "NVIDIA", 2000, 30)))));
    PodUsage u = PodUsage.of(grant);
    assertThat(u.of("A")).containsExactly(5000, 60, 2);
    assertThat(u.of("B")).containsExactly(100, 0, 1);
    assertThat(u.totalMemory).isEqualTo(5100);
    assertThat(u.totalCores).isEqualTo(60);
  }
}
