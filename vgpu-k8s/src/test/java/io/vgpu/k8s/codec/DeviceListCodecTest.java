package io.vgpu.k8s.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeviceListCodecTest {
  private static final PodRef POD = new PodRef("default", "p");

  private static DeviceGrant dev(String uuid, int mem, int cores) {
    return new DeviceGrant(uuid, "NVIDIA", mem, cores);
  }

  private static ContainerGrant ctr(String name, DeviceGrant... devices) {
    return new ContainerGrant(name, List.of(devices));
  }

  @Test
  void encodesOneContainerWithOneDevice() {
    PodGrant grant = new PodGrant(POD, "n", List.of(), List.of(ctr("gpu", dev("GPU-a", 4096, 25))));
    assertThat(DeviceListCodec.encode(grant)).isEqualTo("GPU-a,NVIDIA,4096,25:;");
  }

  @Test
  void encodesSeveralDevicesOfOneContainerInGrantOrder() {
    PodGrant grant = new PodGrant(POD, "n", List.of(), List.of(ctr("gpu", dev("GPU-b", 3000, 30), dev("GPU-a", 3000, 30))));
    assertThat(DeviceListCodec.encode(grant)).isEqualTo("GPU-b,NVIDIA,3000,30:GPU-a,NVIDIA,3000,30:;");
  }

  @Test
  void writesInitContainersFirstAndAnEmptySegmentPerContainerWithoutDevices() {
    PodGrant grant =
        new PodGrant(
            POD,
            "n",
            List.of(ctr("setup")),
            List.of(ctr("a", dev("GPU-a", 1000, 0)), ctr("sidecar"), ctr("b", dev("GPU-b", 2000, 10))));
    assertThat(DeviceListCodec.encode(grant)).isEqualTo(";GPU-a,NVIDIA,1000,0:;;GPU-b,NVIDIA,2000,10:;");
  }

  @Test
  void decodesKeepingEmptySegmentsSoSegmentIIsContainerI() {
    assertThat(DeviceListCodec.decode(";GPU-a,NVIDIA,1000,0:;;GPU-b,NVIDIA,2000,10:;"))
        .containsExactly(List.of(), List.of(dev("GPU-a", 1000, 0)), List.of(), List.of(dev("GPU-b", 2000, 10)));
    assertThat(DeviceListCodec.decode(";;")).containsExactly(List.of(), List.of());
    assertThat(DeviceListCodec.decode("")).isEmpty();
  }

  @Test
  void roundTripsEncodedGrants() {
    String value = "GPU-b,NVIDIA,3000,30:GPU-a,NVIDIA,3000,30:;;";
    List<List<DeviceGrant>> decoded = DeviceListCodec.decode(value);
    assertThat(DeviceListCodec.encode(List.of(new ContainerGrant("x", decoded.get(0)), new ContainerGrant("y", decoded.get(1)))))
        .isEqualTo(value);
  }

  @Test
  void acceptsAnUnterminatedLastSegmentAndExtraFields() {
    assertThat(DeviceListCodec.decode("GPU-a,NVIDIA,1,2,extra:")).containsExactly(List.of(new DeviceGrant("GPU-a", "NVIDIA", 1, 2)));
  }

  @Test
  void skipsEntriesWithoutAComma() {
    assertThat(DeviceListCodec.decode("junk:GPU-a,NVIDIA,1,2:;")).containsExactly(List.of(dev("GPU-a", 1, 2)));
  }

  @Test
  void rejectsDevicesWithFewerThanFourFieldsOrBadNumbers() {
    assertThatThrownBy(() -> DeviceListCodec.decode("GPU-a,NVIDIA,1:;"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("GPU-a,NVIDIA,1")
        .hasMessageContaining("3 fields");
    assertThatThrownBy(() -> DeviceListCodec.decode("GPU-a,NVIDIA,x,1:;")).hasMessageContaining("memory 'x'");
    assertThatThrownBy(() -> DeviceListCodec.decode("GPU-a,NVIDIA,1,-1:;")).hasMessageContaining("cores '-1'");
  }

  @Test
  void decodesIntoAGrantByContainerPosition() {
    PodGrant grant =
        DeviceListCodec.decodeGrant(POD, "n", ";GPU-a,NVIDIA,1000,0:;", List.of("setup"), List.of("app", "sidecar"));
    assertThat(grant.initContainers()).containsExactly(ContainerGrant.empty("setup"));
    assertThat(grant.containers()).containsExactly(ctr("app", dev("GPU-a", 1000, 0)), ContainerGrant.empty("sidecar"));
    assertThat(grant.node()).isEqualTo("n");
  }

  @Test
  void refusesDevicesForContainersThePodDoesNotHave() {
    assertThatThrownBy(() -> DeviceListCodec.decodeGrant(POD, "n", ";GPU-a,NVIDIA,1,1:;", List.of(), List.of("app")))
        .hasMessageContaining("container 1")
        .hasMessageContaining("has 1 containers");
  }
}
