package io.vgpu.examples.lab.kubelet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.Device;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * NVIDIA's runtime is the node's default: a container's own {@code NVIDIA_VISIBLE_DEVICES} exposes GPUs
 * whatever it requested, and beats the device plugin's value, as kubelet and containerd order the two.
 */
class NvidiaRuntimeTest {
  private static final String UUID_0 = "GPU-12345678-1234-1234-1234-123456780000";
  private static final String UUID_1 = "GPU-12345678-1234-1234-1234-123456780001";
  private static final List<Device> NODE = List.of(
      new Device(UUID_0, 0, "NVIDIA A100-SXM4-40GB", 40960, 0, true, ""),
      new Device(UUID_1, 1, "NVIDIA A100-SXM4-40GB", 40960, 0, true, ""));

  @Test
  void aContainerThatAsksForNoGpuButSetsTheVariableSeesTheCardsItNames() throws IOException {
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "all"), Map.of(), NODE)).contains("all");
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "1"), Map.of(), NODE)).contains("1");
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", UUID_1 + ",0"), Map.of(), NODE)).contains(UUID_1 + ",0");
  }

  @Test
  void noneGivesTheDriverWithoutCardsAndVoidEmptyOrNoVariableGiveNothing() throws IOException {
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "none"), Map.of(), NODE)).contains("none");
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "void"), Map.of(), NODE)).isEmpty();
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", ""), Map.of(), NODE)).isEmpty();
    assertThat(NvidiaRuntime.exposed(Map.of("PATH", "/bin"), Map.of(), NODE)).isEmpty();
  }

  @Test
  void theDevicePluginsValueCountsWhenThePodSetsNone() throws IOException {
    assertThat(NvidiaRuntime.exposed(Map.of(), Map.of("NVIDIA_VISIBLE_DEVICES", UUID_0), NODE)).contains(UUID_0);
  }

  @Test
  void thePodSpecsValueBeatsTheDevicePluginsForTheRuntimeButNotForGetenv() throws IOException {
    Map<String, String> own = Map.of("NVIDIA_VISIBLE_DEVICES", "all");
    Map<String, String> allocated = Map.of("NVIDIA_VISIBLE_DEVICES", UUID_0, "CUDA_DEVICE_MEMORY_LIMIT_0", "1024m");

    assertThat(NvidiaRuntime.exposed(own, allocated, NODE)).contains("all");
    assertThat(NvidiaRuntime.processEnvironment(own, allocated))
        .containsEntry("NVIDIA_VISIBLE_DEVICES", UUID_0)
        .containsEntry("CUDA_DEVICE_MEMORY_LIMIT_0", "1024m");
  }

  @Test
  void aCardTheNodeDoesNotHaveStopsTheContainerFromStartingNamingIt() {
    assertThatThrownBy(() -> NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "0,7"), Map.of(), NODE))
        .isInstanceOf(IOException.class)
        .hasMessage("nvidia-container-cli: device error: 7: unknown device (NVIDIA_VISIBLE_DEVICES=0,7)");
  }

  @Test
  void aNodeWithoutGpusExposesNone() throws IOException {
    assertThat(NvidiaRuntime.exposed(Map.of("NVIDIA_VISIBLE_DEVICES", "all"), Map.of(), List.of())).isEmpty();
  }
}
