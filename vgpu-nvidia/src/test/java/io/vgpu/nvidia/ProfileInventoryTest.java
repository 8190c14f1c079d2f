package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.Device;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.mock.GpuProfile;
import io.vgpu.mock.GpuProfiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The inventory read through JNA from the mock libnvidia-ml.so.1 of a machine with one GPU of every
 * vgpu-mock profile ({@code all-profiles.list}) equals, field by field, profiles.csv and the device
 * list. Runs in the {@code mock-profiles} surefire execution.
 */
@Tag("mock-profiles")
class ProfileInventoryTest {
  private static Nvml nvml;
  private static List<Map<String, String>> listed;

  @BeforeAll
  static void open() {
    if (MockMachine.prepare()) {
      nvml = Nvml.open();
      listed = MockMachine.deviceList();
    }
  }

  @BeforeEach
  void built() {
    MockMachine.assumeBuilt(Nvml.LIBRARY);
  }

  @AfterAll
  static void close() {
    if (nvml != null) {
      nvml.close();
    }
  }

  private static GpuProfile profileOf(int position) {
    return GpuProfiles.get(listed.get(position).get("profile"));
  }

  /** The list's PCI address with NVML's 8-digit domain, e.g. {@code 00fe:10:00.0} -> {@code 000000FE:10:00.0}. */
  private static String busId(int position) {
    String pci = listed.get(position).get("pci");
    return ("0000" + pci).toUpperCase(java.util.Locale.ROOT);
  }

  private static int numa(int position) {
    return Math.max(0, Integer.parseInt(listed.get(position).get("numa")));
  }

  @Test
  void theMachineHoldsEveryProfileAndTheMockIsWhatWasLoaded() {
    assertThat(listed.stream().map(l -> l.get("profile")).collect(Collectors.toList()))
        .as("all-profiles.list must name every profile of profiles.csv once")
        .containsExactlyInAnyOrderElementsOf(GpuProfiles.all().stream().map(GpuProfile::profile).toList());
    assertThat(Path.of(nvml.library()).getParent()).isEqualTo(MockMachine.nativeDirectory());
    assertThat(nvml.deviceCount()).isEqualTo(listed.size());
    assertThat(nvml.driverVersion()).isNotBlank();
  }

  @Test
  void nvmlReportsEveryProfileFieldByField() {
    for (int i = 0; i < listed.size(); i++) {
      GpuProfile profile = profileOf(i);
      Map<String, String> line = listed.get(i);
      NvmlDevice gpu = nvml.device(i);
      String what = profile.profile() + " at position " + i;
      assertThat(gpu.name()).as(what).isEqualTo(profile.name());
      assertThat(gpu.memory().total()).as(what).isEqualTo(profile.memoryMiB() << 20);
      assertThat(gpu.memory().totalMiB()).as(what).isEqualTo(profile.memoryMiB());
      assertThat(gpu.computeCapability().toString()).as(what).isEqualTo(profile.computeCapability());
      assertThat(gpu.attributes().multiprocessorCount()).as(what).isEqualTo(profile.multiprocessors());
      assertThat(gpu.attributes().memoryMiB()).as(what).isEqualTo(profile.memoryMiB());
      assertThat(gpu.architecture()).as(what).isEqualTo(profile.architecture());
      assertThat(gpu.pciInfo().pciDeviceId()).as(what).isEqualTo(profile.pciDeviceId());
      assertThat(gpu.uuid()).as(what).isEqualTo(line.get("uuid"));
      assertThat(gpu.index()).as(what).isEqualTo(i);
      assertThat(gpu.minorNumber()).as(what).isEqualTo(i);
      assertThat(gpu.pciInfo().busId()).as(what).isEqualTo(busId(i));
      int numa = Integer.parseInt(line.get("numa"));
      assertThat(gpu.numaNode()).as(what).isEqualTo(numa < 0 ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(numa));
      boolean migCapable = profile.architecture().equals("ampere") || profile.architecture().equals("hopper");
      assertThat(gpu.migMode().map(NvmlDevice.MigMode::enabled))
          .as(what)
          .isEqualTo(migCapable ? java.util.Optional.of("enabled".equals(line.get("mig"))) : java.util.Optional.empty());
      assertThat(gpu.activeNvLinks()).as(what).isEqualTo(Integer.parseInt(line.get("nvlinks")));
      assertThat(gpu.computeProcesses()).as(what).isEmpty();
      assertThat(gpu.utilization()).as(what).isEqualTo(new NvmlDevice.Utilization(0, 0));
      assertThat(nvml.deviceByUuid(line.get("uuid"))).as(what).isEqualTo(gpu);
    }
  }

  @Test
  void aProcessHoldingMemoryIsListedWithItsPidAndMemory(@TempDir Path dir) throws Exception {
    Path program = MockMachine.conformanceProgram();
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(program), program + " was not built: skipped");
    long contextMiB = 64;
    ProcessBuilder builder = new ProcessBuilder(program.toString(), "process-holder");
    builder.environment().put("LD_LIBRARY_PATH", MockMachine.nativeDirectory().toString());
    builder.environment().put("VGPU_TEST_DIR", dir.toString());
    builder.environment().put("VGPU_MOCK_CONTEXT_MIB", Long.toString(contextMiB));
    Process holder = builder.redirectErrorStream(true).redirectOutput(dir.resolve("holder.log").toFile()).start();
    try {
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
      while (!Files.exists(dir.resolve("holder.ready")) && holder.isAlive() && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(dir.resolve("holder.ready")).as(Files.readString(dir.resolve("holder.log"))).exists();
      NvmlDevice gpu = nvml.device(0);
      long held = (256 + contextMiB) << 20; // the role allocates 256 MiB in its primary context
      assertThat(gpu.computeProcesses()).singleElement().satisfies(p -> {
        assertThat(p.pid()).isEqualTo(holder.pid());
        assertThat(p.usedGpuMemory()).isEqualTo(held);
        assertThat(p.gpuInstanceId()).isEqualTo(0xFFFFFFFF);
      });
      NvmlDevice.MemoryInfo memory = gpu.memory();
      assertThat(memory.used()).isEqualTo(held);
      assertThat(memory.free()).isEqualTo(memory.total() - held);
    } finally {
      holder.destroyForcibly().waitFor();
    }
    assertThat(nvml.device(0).computeProcesses()).as("a dead process's memory is given back").isEmpty();
  }

  @Test
  void processesThatDoNotFitTheFirstBufferAreReadWithALargerOne(@TempDir Path dir) throws Exception {
    Path program = MockMachine.conformanceProgram();
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(program), program + " was not built: skipped");
    List<Process> holders = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        Path own = Files.createDirectory(dir.resolve("holder" + i));
        ProcessBuilder builder = new ProcessBuilder(program.toString(), "process-holder");
        builder.environment().put("LD_LIBRARY_PATH", MockMachine.nativeDirectory().toString());
        builder.environment().put("VGPU_TEST_DIR", own.toString());
        holders.add(builder.redirectErrorStream(true).redirectOutput(own.resolve("holder.log").toFile()).start());
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
        while (!Files.exists(own.resolve("holder.ready")) && holders.get(i).isAlive() && System.nanoTime() < deadline) {
          Thread.sleep(20);
        }
        assertThat(own.resolve("holder.ready")).as(Files.readString(own.resolve("holder.log"))).exists();
      }
      List<Long> pids = holders.stream().map(Process::pid).toList();
      NvmlDevice gpu = nvml.device(0);
      for (int first : new int[] {1, 2, 3, NvmlDevice.PROCESS_BUFFER}) {
        assertThat(gpu.computeProcesses(first)).as("first buffer of %d", first)
            .extracting(p -> (long) p.pid()).containsExactlyInAnyOrderElementsOf(pids);
      }
    } finally {
      for (Process holder : holders) {
        holder.destroyForcibly().waitFor();
      }
    }
  }

  @Test
  void theNvmlSourceListsEveryProfileAsADevice(@TempDir Path sysfs) {
    List<Device> expected = new ArrayList<>();
    for (int i = 0; i < listed.size(); i++) {
      GpuProfile profile = profileOf(i);
      expected.add(new Device(listed.get(i).get("uuid"), i, profile.name(), profile.memoryMiB(), numa(i), true, busId(i)));
    }
    try (DeviceSource source = nvmlSource(Map.of("sysfs", sysfs.toString()))) {
      assertThat(source.name()).isEqualTo("nvml");
      assertThat(source.devices()).containsExactlyElementsOf(expected);
    }
  }

  @Test
  void sysfsNamesTheNumaNodeWhereItHasTheDevice(@TempDir Path sysfs) throws IOException {
    Path device = sysfs.resolve("bus/pci/devices/" + listed.get(4).get("pci").toLowerCase(java.util.Locale.ROOT));
    Files.createDirectories(device);
    Files.writeString(device.resolve("numa_node"), "7\n");
    try (DeviceSource source = nvmlSource(Map.of("sysfs", sysfs.toString()))) {
      assertThat(source.devices().get(4).numa()).as("sysfs wins, as in HAMi").isEqualTo(7);
      assertThat(source.devices().get(2).numa()).as("NVML where sysfs has nothing").isEqualTo(numa(2));
    }
  }

  @Test
  void filteredDevicesAreNotOffered(@TempDir Path sysfs) {
    Map<String, String> options =
        Map.of("sysfs", sysfs.toString(), "filterdevices.uuid", listed.get(0).get("uuid") + ", " + listed.get(3).get("uuid"), "filterdevices.index", "5");
    try (DeviceSource source = nvmlSource(options)) {
      assertThat(source.devices()).extracting(Device::index).containsExactly(1, 2, 4, 6);
    }
  }

  @Test
  void topologyFollowsTheNumaNodesAndDeviceNodesTheMinorNumbers(@TempDir Path sysfs) {
    try (NvidiaDeviceSource source = (NvidiaDeviceSource) nvmlSource(Map.of("sysfs", sysfs.toString()))) {
      NvidiaDeviceSource.Topology topology = source.topology();
      String a100 = listed.get(0).get("uuid");
      assertThat(topology.between(a100, listed.get(1).get("uuid"))).isEqualTo(NvmlDevice.TopologyLevel.NODE);
      assertThat(topology.between(a100, listed.get(2).get("uuid"))).isEqualTo(NvmlDevice.TopologyLevel.SYSTEM);
      assertThat(topology.between(a100, a100)).isEqualTo(NvmlDevice.TopologyLevel.INTERNAL);
      assertThat(topology.activeNvLinks()).containsEntry(a100, 12).containsEntry(listed.get(4).get("uuid"), 0);
      assertThat(source.deviceNodes()).containsEntry(a100, List.of("/dev/nvidia0")).containsEntry(listed.get(6).get("uuid"), List.of("/dev/nvidia6"));
    }
  }

  @Test
  void unknownOptionsAndBadValuesAreOneLineErrors() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> nvmlSource(Map.of("filter", "x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("unknown nvml device source option 'filter'; known: library, filterdevices.uuid, filterdevices.index, preConfiguredDeviceMemory, sysfs");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> nvmlSource(Map.of("filterdevices.index", "1,x")))
        .hasMessage("nvml device source option filterdevices.index='1,x': 'x' is not a GPU index");
  }

  private static DeviceSource nvmlSource(Map<String, String> options) {
    return ServiceLoader.load(io.vgpu.api.spi.DeviceSourceProvider.class).stream()
        .map(ServiceLoader.Provider::get)
        .filter(p -> p.name().equals("nvml"))
        .findFirst()
        .orElseThrow()
        .create(options);
  }
}
