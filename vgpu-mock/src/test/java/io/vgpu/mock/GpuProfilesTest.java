package io.vgpu.mock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.Device;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceProvider;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class GpuProfilesTest {

  @Test
  void servesTheProfilesTheIssueNames() {
    assertThat(GpuProfiles.all())
        .extracting(GpuProfile::profile, GpuProfile::name, GpuProfile::memoryMiB)
        .contains(
            org.assertj.core.groups.Tuple.tuple("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 40960L),
            org.assertj.core.groups.Tuple.tuple("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 81920L),
            org.assertj.core.groups.Tuple.tuple("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", 81559L),
            org.assertj.core.groups.Tuple.tuple("H200", "NVIDIA H200", 143771L),
            org.assertj.core.groups.Tuple.tuple("T4", "Tesla T4", 15360L),
            org.assertj.core.groups.Tuple.tuple("L4", "NVIDIA L4", 23034L),
            org.assertj.core.groups.Tuple.tuple("V100-SXM2-32GB", "Tesla V100-SXM2-32GB", 32768L));
  }

  @Test
  void unknownProfileNamesTheKnownOnes() {
    assertThatThrownBy(() -> GpuProfiles.get("B300"))
        .hasMessageStartingWith("unknown GPU profile 'B300'; known profiles: A100-SXM4-40GB,");
  }

  @Test
  void rejectsAMalformedProfileLine() {
    assertThatThrownBy(() -> GpuProfiles.parse(List.of(
            "profile,name,memoryMiB,computeCapability,multiprocessors,maxThreadsPerMultiprocessor,architecture,pciDeviceId",
            "X,Y,notanumber,8.0,1,1,a,0x1")))
        .hasMessageContaining(":2:");
  }

  @Test
  void mockSourceIsFoundByServiceLoaderAndUsesTheDefaultDevice() {
    DeviceSourceProvider provider =
        ServiceLoader.load(DeviceSourceProvider.class).stream()
            .map(ServiceLoader.Provider::get)
            .filter(p -> p.name().equals("mock"))
            .findFirst()
            .orElseThrow();
    DeviceSource source = provider.create(Map.of());
    assertThat(source.devices())
        .containsExactly(new Device("GPU-12345678-1234-1234-1234-123456780000", 0, "NVIDIA A100-SXM4-40GB", 40960, 0, true, "00000000:01:00.0"));
  }

  @Test
  void mockSourceTakesProfileAndCount() {
    DeviceSource source = new MockDeviceSourceProvider().create(Map.of("profile", "T4", "count", "3", "uuidPrefix", "GPU-aaaaaaaa-0000-0000-0000-0000000000"));
    assertThat(source.devices()).extracting(Device::uuid)
        .containsExactly("GPU-aaaaaaaa-0000-0000-0000-000000000000", "GPU-aaaaaaaa-0000-0000-0000-000000000001", "GPU-aaaaaaaa-0000-0000-0000-000000000002");
    assertThat(source.devices()).allSatisfy(d -> assertThat(d.model()).isEqualTo("Tesla T4"));
  }

  @Test
  void badOptionsNameTheOption() {
    assertThatThrownBy(() -> new MockDeviceSourceProvider().create(Map.of("count", "two")))
        .hasMessage("mock device source option count='two' is not an integer");
    assertThatThrownBy(() -> new MockDeviceSourceProvider().create(Map.of("colour", "red")))
        .hasMessageStartingWith("unknown mock device source option 'colour'");
  }
}
