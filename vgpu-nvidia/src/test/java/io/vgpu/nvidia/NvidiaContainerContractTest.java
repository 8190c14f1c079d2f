package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContract.Allocation;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.api.spi.ContractSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Golden allocations: env, mounts, device nodes and the limits file, byte for byte. */
class NvidiaContainerContractTest {
  private static final PodRef POD = new PodRef("ml", "train");
  private static final String UID = "6f1c2d3e-0000-4000-8000-000000000001";
  private static final String GPU0 = "GPU-12345678-1234-1234-1234-123456780000";
  private static final String GPU1 = "GPU-12345678-1234-1234-1234-123456780001";

  private static ContainerContract contract(ContractSettings settings) {
    ContainerContractProvider provider =
        ServiceLoader.load(ContainerContractProvider.class).stream()
            .map(ServiceLoader.Provider::get)
            .filter(p -> p.vendor().equals("NVIDIA"))
            .findFirst()
            .orElseThrow();
    return provider.create(settings);
  }

  private static ContainerGrant grant(String container, DeviceGrant... devices) {
    return new ContainerGrant(container, List.of(devices));
  }

  private static DeviceGrant gpu(String uuid, int memoryMiB, int cores) {
    return new DeviceGrant(uuid, "NVIDIA", memoryMiB, cores);
  }

  /** The allocation as text: env, mounts, devices, then each host file with its content. */
  private static String render(Allocation a) {
    StringBuilder out = new StringBuilder();
    a.env().forEach((k, v) -> out.append("env ").append(k).append('=').append(v).append('\n'));
    a.mounts().forEach(m -> out.append("mount ").append(m.containerPath()).append(" <- ").append(m.hostPath()).append(m.readOnly() ? " ro" : " rw").append('\n'));
    a.devices().forEach(d -> out.append("device ").append(d.containerPath()).append(" <- ").append(d.hostPath()).append(' ').append(d.permissions()).append('\n'));
    a.hostFiles().forEach(f -> out.append("file ").append(f.hostPath()).append('\n').append(f.content()));
    return out.toString();
  }

  @Test
  void oneGpuWithHamisDefaults() {
    Allocation a = contract(ContractSettings.DEFAULT).allocate(POD, UID, grant("main", gpu(GPU0, 4096, 25)), Map.of());
    assertThat(render(a))
        .isEqualTo(
            """
            env NVIDIA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780000
            env CUDA_DEVICE_MEMORY_LIMIT_0=4096m
            env CUDA_DEVICE_SM_LIMIT=25
            env CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            env LIBCUDA_LOG_LEVEL=1
            mount /usr/local/vgpu/libvgpu.so <- /usr/local/vgpu/libvgpu.so ro
            mount /usr/local/vgpu <- /usr/local/vgpu/containers/6f1c2d3e-0000-4000-8000-000000000001_main rw
            mount /etc/ld.so.preload <- /usr/local/vgpu/ld.so.preload ro
            mount /etc/vgpu/limits <- /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_main ro
            file /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_main
            # vgpu limits of pod ml/train container main
            # devices: GPU-12345678-1234-1234-1234-123456780000
            CUDA_DEVICE_MEMORY_LIMIT_0=4096m
            CUDA_DEVICE_SM_LIMIT=25
            CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            LIBCUDA_LOG_LEVEL=1
            END
            """);
  }

  @Test
  void twoGpusWithDifferentCoresGetPerDeviceLimitsAndTheNodeSwitches() {
    ContractSettings settings =
        ContractSettings.DEFAULT.withHookPath("/opt/hami").withLibCudaLogLevel("").withMemoryOversubscribed(true).withGpuCorePolicy("force");
    Allocation a =
        contract(settings)
            .allocate(POD, UID, grant("trainer", gpu(GPU1, 8192, 20), gpu(GPU0, 10240, 30)), Map.of("CUDA_TASK_PRIORITY", "1"));
    assertThat(render(a))
        .isEqualTo(
            """
            env NVIDIA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780001,GPU-12345678-1234-1234-1234-123456780000
            env CUDA_DEVICE_MEMORY_LIMIT_0=8192m
            env CUDA_DEVICE_MEMORY_LIMIT_1=10240m
            env CUDA_DEVICE_SM_LIMIT=20
            env CUDA_DEVICE_SM_LIMIT_0=20
            env CUDA_DEVICE_SM_LIMIT_1=30
            env CUDA_DEVICE_MEMORY_SHARED_CACHE=/opt/hami/vgpu/vgpu.cache
            env CUDA_OVERSUBSCRIBE=true
            env GPU_CORE_UTILIZATION_POLICY=force
            env CUDA_TASK_PRIORITY=1
            mount /opt/hami/vgpu/libvgpu.so <- /opt/hami/vgpu/libvgpu.so ro
            mount /opt/hami/vgpu <- /opt/hami/vgpu/containers/6f1c2d3e-0000-4000-8000-000000000001_trainer rw
            mount /etc/ld.so.preload <- /opt/hami/vgpu/ld.so.preload ro
            mount /etc/vgpu/limits <- /opt/hami/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_trainer ro
            file /opt/hami/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_trainer
            # vgpu limits of pod ml/train container trainer
            # devices: GPU-12345678-1234-1234-1234-123456780001,GPU-12345678-1234-1234-1234-123456780000
            CUDA_DEVICE_MEMORY_LIMIT_0=8192m
            CUDA_DEVICE_MEMORY_LIMIT_1=10240m
            CUDA_DEVICE_SM_LIMIT=20
            CUDA_DEVICE_SM_LIMIT_0=20
            CUDA_DEVICE_SM_LIMIT_1=30
            CUDA_DEVICE_MEMORY_SHARED_CACHE=/opt/hami/vgpu/vgpu.cache
            CUDA_OVERSUBSCRIBE=true
            GPU_CORE_UTILIZATION_POLICY=force
            CUDA_TASK_PRIORITY=1
            END
            """);
  }

  @Test
  void twoContainersOfOnePodGetTheirOwnDirectoryAndLimitsFile() {
    ContainerContract contract = contract(ContractSettings.DEFAULT.withLibCudaLogLevel("3"));
    Allocation first = contract.allocate(POD, UID, grant("a", gpu(GPU0, 2048, 10)), Map.of());
    Allocation second = contract.allocate(POD, UID, grant("b", gpu(GPU0, 3072, 15)), Map.of("CUDA_DISABLE_CONTROL", "true"));
    assertThat(render(first) + render(second))
        .isEqualTo(
            """
            env NVIDIA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780000
            env CUDA_DEVICE_MEMORY_LIMIT_0=2048m
            env CUDA_DEVICE_SM_LIMIT=10
            env CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            env LIBCUDA_LOG_LEVEL=3
            mount /usr/local/vgpu/libvgpu.so <- /usr/local/vgpu/libvgpu.so ro
            mount /usr/local/vgpu <- /usr/local/vgpu/containers/6f1c2d3e-0000-4000-8000-000000000001_a rw
            mount /etc/ld.so.preload <- /usr/local/vgpu/ld.so.preload ro
            mount /etc/vgpu/limits <- /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_a ro
            file /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_a
            # vgpu limits of pod ml/train container a
            # devices: GPU-12345678-1234-1234-1234-123456780000
            CUDA_DEVICE_MEMORY_LIMIT_0=2048m
            CUDA_DEVICE_SM_LIMIT=10
            CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            LIBCUDA_LOG_LEVEL=3
            END
            env NVIDIA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780000
            env CUDA_DEVICE_MEMORY_LIMIT_0=3072m
            env CUDA_DEVICE_SM_LIMIT=15
            env CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            env LIBCUDA_LOG_LEVEL=3
            mount /usr/local/vgpu/libvgpu.so <- /usr/local/vgpu/libvgpu.so ro
            mount /usr/local/vgpu <- /usr/local/vgpu/containers/6f1c2d3e-0000-4000-8000-000000000001_b rw
            mount /etc/ld.so.preload <- /usr/local/vgpu/ld.so.preload ro
            mount /etc/vgpu/limits <- /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_b ro
            file /usr/local/vgpu/limits/6f1c2d3e-0000-4000-8000-000000000001_b
            # vgpu limits of pod ml/train container b
            # devices: GPU-12345678-1234-1234-1234-123456780000
            CUDA_DEVICE_MEMORY_LIMIT_0=3072m
            CUDA_DEVICE_SM_LIMIT=15
            CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/vgpu.cache
            LIBCUDA_LOG_LEVEL=3
            END
            """);
  }

  @Test
  void theLimitsFileNeverLivesInADirectoryTheContainerCanWrite() {
    Allocation a = contract(ContractSettings.DEFAULT).allocate(POD, UID, grant("main", gpu(GPU0, 4096, 25)), Map.of());
    String limits = a.hostFiles().get(0).hostPath();
    for (ContainerContract.Mount m : a.mounts()) {
      if (!m.readOnly()) {
        assertThat(limits).doesNotStartWith(m.hostPath() + "/");
      }
    }
    assertThat(a.mounts()).filteredOn(m -> m.containerPath().equals("/etc/vgpu/limits")).singleElement().satisfies(m -> {
      assertThat(m.readOnly()).isTrue();
      assertThat(m.hostPath()).isEqualTo(limits);
    });
  }

  @Test
  void theOnlyWritableMountIsTheContainersOwnDirectory() {
    // A host directory mounted writable into every GPU container (HAMi's /tmp/vgpulock) would be a
    // channel between tenants; libvgpu.so needs nothing beyond its own directory.
    Allocation a = contract(ContractSettings.DEFAULT).allocate(POD, UID, grant("main", gpu(GPU0, 4096, 25)), Map.of());
    assertThat(a.mounts())
        .filteredOn(m -> !m.readOnly())
        .singleElement()
        .satisfies(m -> assertThat(m.hostPath()).isEqualTo("/usr/local/vgpu/containers/" + UID + "_main"));
  }

  @Test
  void theLimitsFileHoldsExactlyTheEnvironmentsLimitKeys() {
    ContractSettings settings = ContractSettings.DEFAULT.withDisableCoreLimit(true).withMemoryOversubscribed(true);
    Allocation a =
        contract(settings).allocate(POD, UID, grant("main", gpu(GPU0, 4096, 25), gpu(GPU1, 4096, 25)), Map.of("GPU_CORE_UTILIZATION_POLICY", "force", "CUDA_TASK_PRIORITY", "-3"));
    StringBuilder expected = new StringBuilder("# vgpu limits of pod ml/train container main\n# devices: " + GPU0 + "," + GPU1 + "\n");
    a.env().forEach((k, v) -> {
      if (!k.equals("NVIDIA_VISIBLE_DEVICES")) {
        expected.append(k).append('=').append(v).append('\n');
      }
    });
    expected.append("END\n");
    assertThat(a.hostFiles().get(0).content()).isEqualTo(expected.toString());
    assertThat(a.env()).containsEntry("GPU_CORE_UTILIZATION_POLICY", "disable").doesNotContainKey("CUDA_DEVICE_SM_LIMIT_0");
  }

  @Test
  void aPodCannotSwitchItsOwnLimitsOff() {
    ContainerContract contract = contract(ContractSettings.DEFAULT);
    for (String yes : new String[] {"true", "1", "T", "TRUE"}) {
      Allocation a = contract.allocate(POD, UID, grant("main", gpu(GPU0, 1024, 0)), Map.of("CUDA_DISABLE_CONTROL", yes));
      assertThat(a.mounts()).as(yes).anyMatch(m -> m.containerPath().equals("/etc/ld.so.preload") && m.readOnly());
      assertThat(a.env()).as(yes).doesNotContainKey("CUDA_DISABLE_CONTROL");
      assertThat(a.hostFiles().get(0).content()).as(yes).doesNotContain("CUDA_DISABLE_CONTROL").endsWith("\nEND\n");
    }
  }

  @Test
  void onlyTheDeviceConfigsNamespacesRunWithoutEnforcement() {
    ContainerContract contract = contract(ContractSettings.DEFAULT.withDisableControlNamespaces(Set.of("ml", "tools")));
    Allocation exempt = contract.allocate(POD, UID, grant("main", gpu(GPU0, 1024, 10)), Map.of());
    assertThat(exempt.mounts()).noneMatch(m -> m.containerPath().equals("/etc/ld.so.preload"));
    assertThat(exempt.env()).containsEntry("CUDA_DISABLE_CONTROL", "true");
    assertThat(exempt.hostFiles().get(0).content()).contains("\nCUDA_DISABLE_CONTROL=true\nEND\n");
    Allocation enforced = contract.allocate(new PodRef("other", "train"), UID, grant("main", gpu(GPU0, 1024, 10)), Map.of("CUDA_DISABLE_CONTROL", "true"));
    assertThat(enforced.mounts()).anyMatch(m -> m.containerPath().equals("/etc/ld.so.preload"));
    assertThat(enforced.env()).doesNotContainKey("CUDA_DISABLE_CONTROL");
  }

  @Test
  void deviceSpecsPassTheGpusNodesAndTheControlNodesThatExist(@TempDir Path root) throws IOException {
    Files.createDirectories(root.resolve("dev"));
    Files.writeString(root.resolve("dev/nvidiactl"), "");
    Files.writeString(root.resolve("dev/nvidia-uvm"), "");
    ContractSettings settings = ContractSettings.DEFAULT.withDeviceSpecs(root.toString(), Map.of(GPU0, List.of("/dev/nvidia0"), GPU1, List.of("/dev/nvidia1")));
    Allocation a = contract(settings).allocate(POD, UID, grant("main", gpu(GPU1, 1024, 10), gpu(GPU0, 1024, 10)), Map.of());
    assertThat(a.devices())
        .containsExactly(
            new ContainerContract.DeviceNode("/dev/nvidia1", root + "/dev/nvidia1", "rw"),
            new ContainerContract.DeviceNode("/dev/nvidia0", root + "/dev/nvidia0", "rw"),
            new ContainerContract.DeviceNode("/dev/nvidiactl", root + "/dev/nvidiactl", "rw"),
            new ContainerContract.DeviceNode("/dev/nvidia-uvm", root + "/dev/nvidia-uvm", "rw"));
    assertThatThrownBy(() -> contract(settings).allocate(POD, UID, grant("main", gpu("GPU-other", 1, 1)), Map.of()))
        .hasMessage("pod ml/train container main: no device node is known for GPU-other (ContractSettings.deviceNodes)");
  }

  @Test
  void aContainerWithoutGpusReceivesNothing() {
    Allocation a = contract(ContractSettings.DEFAULT).allocate(POD, UID, ContainerGrant.empty("sidecar"), Map.of());
    assertThat(a.env()).isEmpty();
    assertThat(a.mounts()).isEmpty();
    assertThat(a.hostFiles()).isEmpty();
  }

  @Test
  void malformedContainerValuesAreOneLineErrorsNotLimitsLibvgpuWouldRefuse() {
    ContainerContract contract = contract(ContractSettings.DEFAULT);
    ContainerGrant g = grant("main", gpu(GPU0, 1024, 10));
    assertThatThrownBy(() -> contract.allocate(POD, UID, g, Map.of("CUDA_TASK_PRIORITY", "high")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("pod ml/train container main: env CUDA_TASK_PRIORITY='high' is not an integer between -1000000 and 1000000");
    assertThatThrownBy(() -> contract.allocate(POD, UID, g, Map.of("CUDA_TASK_PRIORITY", "2000000"))).hasMessageContaining("'2000000'");
    assertThatThrownBy(() -> contract.allocate(POD, UID, g, Map.of("GPU_CORE_UTILIZATION_POLICY", "sometimes")))
        .hasMessage("pod ml/train container main: env GPU_CORE_UTILIZATION_POLICY='sometimes' is not one of default, force, disable");
    assertThatThrownBy(() -> contract.allocate(POD, "../etc", g, Map.of())).hasMessage("pod UID '../etc' cannot name a directory");
  }

  @Test
  void settingsRejectWhatLibvgpuCouldNotRead() {
    assertThatThrownBy(() -> ContractSettings.DEFAULT.withLibCudaLogLevel("debug")).hasMessage("libCudaLogLevel 'debug' must be a digit 0-9 or empty");
    assertThatThrownBy(() -> ContractSettings.DEFAULT.withGpuCorePolicy("always")).hasMessage("gpuCorePolicy 'always' is not one of default, force, disable");
    assertThatThrownBy(() -> ContractSettings.DEFAULT.withHookPath("usr/local")).hasMessage("hook path 'usr/local' must be an absolute path without a trailing slash");
  }

  @Test
  void aKaiFractionContainersGrantFileNamesItsCardsAndTheirLimits() {
    NvidiaContainerContract contract = new NvidiaContainerContract(ContractSettings.DEFAULT.withHookPath("/opt/hook"));
    String file = contract.kaiLimitsFile(POD, UID, "main", List.of(gpu(GPU0, 20889, 0), gpu(GPU1, 20889, 0)));
    assertThat(file)
        .isEqualTo(
            "# vgpu limits of pod ml/train container main\n"
                + "# devices: " + GPU0 + "," + GPU1 + "\n"
                + "VGPU_DEVICES=" + GPU0 + "," + GPU1 + "\n"
                + "CUDA_DEVICE_MEMORY_LIMIT_0=20889m\n"
                + "CUDA_DEVICE_MEMORY_LIMIT_1=20889m\n"
                + "CUDA_DEVICE_SM_LIMIT=0\n"
                + "CUDA_DEVICE_MEMORY_SHARED_CACHE=/opt/hook/vgpu/vgpu.cache\n"
                + "LIBCUDA_LOG_LEVEL=1\n"
                + "END\n");
    assertThatThrownBy(() -> contract.kaiLimitsFile(POD, UID, "main", List.of())).hasMessage("pod ml/train container main: a KAI grant names at least one card");
    assertThatThrownBy(() -> contract.kaiLimitsFile(POD, "..", "main", List.of(gpu(GPU0, 1, 0)))).hasMessage("pod UID '..' cannot name a directory");
  }

  @Test
  void wholeCardsGetTheirUuidsAndDeviceNodesButNoInterposer(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dev) throws java.io.IOException {
    java.nio.file.Files.createDirectories(dev.resolve("dev"));
    java.nio.file.Files.createFile(dev.resolve("dev/nvidiactl"));
    ContractSettings settings = ContractSettings.DEFAULT.withDeviceSpecs(dev.toString(), Map.of(GPU0, List.of("/dev/nvidia0"), GPU1, List.of("/dev/nvidia1")));
    NvidiaContainerContract contract = new NvidiaContainerContract(settings);
    assertThat(render(contract.wholeCards("pod ml/train container main", List.of(GPU1, GPU0))))
        .isEqualTo(
            "env NVIDIA_VISIBLE_DEVICES=" + GPU1 + "," + GPU0 + "\n"
                + "device /dev/nvidia1 <- " + dev + "/dev/nvidia1 rw\n"
                + "device /dev/nvidia0 <- " + dev + "/dev/nvidia0 rw\n"
                + "device /dev/nvidiactl <- " + dev + "/dev/nvidiactl rw\n");
    assertThat(render(new NvidiaContainerContract(ContractSettings.DEFAULT).wholeCards("w", List.of(GPU0)))).isEqualTo("env NVIDIA_VISIBLE_DEVICES=" + GPU0 + "\n");
    assertThatThrownBy(() -> contract.wholeCards("w", List.of("GPU-unknown"))).hasMessage("w: no device node is known for GPU-unknown (ContractSettings.deviceNodes)");
  }
}
