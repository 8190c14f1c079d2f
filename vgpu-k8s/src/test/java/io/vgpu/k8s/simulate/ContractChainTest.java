package io.vgpu.k8s.simulate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.Device;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract.Allocation;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.core.Engine;
import io.vgpu.k8s.simulate.SimulationResult.ContainerOutcome;
import io.vgpu.k8s.testing.ContractProviders;
import io.vgpu.k8s.simulate.SimulationResult.PodOutcome;
import io.vgpu.mock.GpuProfile;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.nvidia.HostPreparation;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.Interposer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole chain on a CPU: {@code vgpu simulate}'s simulator schedules the pods of {@code
 * scenarios/chain.yaml}, the NVIDIA container contract turns each container's grant into env, mounts and
 * a limits file, the node-side steps install libvgpu.so and write the file, and vgpu-native's {@code
 * grant-report} runs over the mock libcuda with exactly that environment and {@code
 * LD_PRELOAD=libvgpu.so}. What the process meets (the totals CUDA and NVML report, the exact allocation
 * boundary, the limits in its shared region) must be the grant, byte for byte. The mock machine is made
 * from the scenario's nodes and the expected numbers from the grants: nothing is copied by hand.
 *
 * <p>Without containers, two things stand in for the runtime: {@code VGPU_MOCK_VISIBLE_DEVICES} exposes
 * the granted GPUs as {@code NVIDIA_VISIBLE_DEVICES} would, and {@code VGPU_LIMITS_FILE} names the host
 * file that would be mounted at {@code /etc/vgpu/limits}. Containers run one after the other, so sharing
 * the region path (a fixed name inside what would be each container's own directory) is harmless.
 */
class ContractChainTest {
  private static final Path NATIVE = Path.of("../vgpu-native/target").toAbsolutePath().normalize();
  private static final Path REPORT = NATIVE.resolve("build/tests/vgpu-conformance");
  private static final int CUDA_SUCCESS = 0;
  private static final int CUDA_ERROR_OUT_OF_MEMORY = 2;

  @TempDir Path hook;
  private Simulator simulator;
  private SimulationResult result;
  private Path mockDevices;

  @BeforeEach
  void schedule() throws Exception {
    assumeThat(REPORT).as("vgpu-native was not built (no C compiler): skipped").isRegularFile();
    assumeThat(Interposer.bundled()).as("vgpu-nvidia carries no libvgpu.so (no C compiler): skipped").isTrue();
    Scenario scenario = new ScenarioParser(Set.of()).parse(Path.of(ContractChainTest.class.getResource("/scenarios/chain.yaml").toURI()));
    ContainerContractProvider nvidia =
        ServiceLoader.load(ContainerContractProvider.class).stream().map(ServiceLoader.Provider::get).filter(p -> p.vendor().equals("NVIDIA")).findFirst().orElseThrow();
    ContainerContractProvider onThisNode = ContractProviders.withHookPath(nvidia, hook);
    simulator = new Simulator(scenario, () -> Engine.builder().loadPoliciesFromClassPath(false), onThisNode);
    result = simulator.replay();
    mockDevices = mockMachineOf(scenario);
    Interposer.install(hook);
  }

  /** A device list for the mock drivers holding exactly the scenario's GPUs (one node). */
  private Path mockMachineOf(Scenario scenario) throws IOException {
    assertThat(scenario.nodes()).hasSize(1);
    StringBuilder list = new StringBuilder();
    for (Device d : scenario.nodes().get(0).devices()) {
      GpuProfile profile = GpuProfiles.all().stream().filter(p -> p.name().equals(d.model())).findFirst().orElseThrow();
      list.append("profile=").append(profile.profile()).append(" uuid=").append(d.uuid()).append('\n');
    }
    Path file = hook.resolve("mock-devices.list");
    Files.writeString(file, list);
    return file;
  }

  @Test
  void everyContainerMeetsExactlyItsGrant() throws Exception {
    int containers = 0;
    for (PodOutcome pod : result.pods()) {
      assertThat(pod.phase()).as(pod.pod().toString()).isEqualTo(Phase.RUNNING);
      for (ContainerOutcome c : pod.containers()) {
        Allocation allocation = simulator.allocation(pod.pod(), c.name()).orElseThrow();
        assertThat(allocation.env()).as("simulate prints the contract's env").isEqualTo(c.env());
        HostPreparation.prepare(allocation);
        ContainerGrant grant = new ContainerGrant(c.name(), c.devices());
        // HAMi's way: the environment alone; then vgpu's: the same environment and the limits file.
        assertMeets(pod.pod(), grant, allocation, run(allocation, allocation.env(), false), "environment");
        String file = mountedAt(allocation, HookLayout.CONTAINER_LIMITS_FILE);
        assertMeets(pod.pod(), grant, allocation, run(allocation, allocation.env(), true), "limits file " + file);
        containers++;
      }
    }
    assertThat(containers).isEqualTo(3);
  }

  @Test
  void theLimitsFileAloneHoldsWhenTheEnvironmentIsLostOrEdited() throws Exception {
    PodOutcome pair = result.pods().stream().filter(p -> p.pod().name().equals("pair")).findFirst().orElseThrow();
    ContainerOutcome both = pair.containers().get(0);
    Allocation allocation = simulator.allocation(pair.pod(), both.name()).orElseThrow();
    HostPreparation.prepare(allocation);
    ContainerGrant grant = new ContainerGrant(both.name(), both.devices());

    String file = "limits file " + mountedAt(allocation, HookLayout.CONTAINER_LIMITS_FILE);
    Report lost = run(allocation, Map.of(NVIDIA_VISIBLE, allocation.env().get(NVIDIA_VISIBLE)), true);
    assertMeets(pair.pod(), grant, allocation, lost, file);

    Map<String, String> edited = new LinkedHashMap<>(allocation.env());
    edited.replaceAll((key, value) -> key.startsWith("CUDA_DEVICE_MEMORY_LIMIT") ? "0" : value);
    edited.put("CUDA_DEVICE_SM_LIMIT", "100");
    edited.put("GPU_CORE_UTILIZATION_POLICY", "disable");
    edited.put("CUDA_DISABLE_CONTROL", "true");
    assertMeets(pair.pod(), grant, allocation, run(allocation, edited, true), file);
  }

  private static final String NVIDIA_VISIBLE = "NVIDIA_VISIBLE_DEVICES";

  /**
   * Runs grant-report as the container's process would run: its env, the preloaded interposer, the mock
   * GPUs it sees and, with {@code limitsFile}, the limits file as if mounted.
   */
  private Report run(Allocation allocation, Map<String, String> containerEnv, boolean limitsFile) throws IOException, InterruptedException {
    String region = allocation.env().get("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    ProcessBuilder builder = new ProcessBuilder(REPORT.toString(), "grant-report", region);
    Map<String, String> env = builder.environment();
    env.clear();
    env.put("PATH", System.getenv().getOrDefault("PATH", "/usr/bin:/bin"));
    env.putAll(containerEnv);
    env.put("LD_PRELOAD", new HookLayout(hook.toString()).library());
    env.put("LD_LIBRARY_PATH", NATIVE.resolve("native").toString());
    env.put("VGPU_MOCK_CONFIG", mockDevices.toString());
    env.put("VGPU_MOCK_STATE", hook.resolve("mock.state").toString());
    env.put("VGPU_MOCK_VISIBLE_DEVICES", allocation.env().get(NVIDIA_VISIBLE));
    if (limitsFile) {
      env.put("VGPU_LIMITS_FILE", mountedAt(allocation, HookLayout.CONTAINER_LIMITS_FILE));
    }
    Path out = hook.resolve("report.out");
    Path err = hook.resolve("report.err");
    Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    String stderr = Files.readString(err, StandardCharsets.UTF_8);
    assertThat(process.exitValue()).as("grant-report failed: %s", stderr).isZero();
    String report = Files.readString(out, StandardCharsets.UTF_8);
    System.out.print(report); // kept in target/surefire-reports/*-output.txt as the record of what was met
    return Report.parse(report);
  }

  private static String mountedAt(Allocation allocation, String containerPath) {
    return allocation.mounts().stream().filter(m -> m.containerPath().equals(containerPath)).findFirst().orElseThrow().hostPath();
  }

  private static void assertMeets(PodRef pod, ContainerGrant grant, Allocation allocation, Report report, String limitsSource) {
    String what = pod + " container " + grant.name();
    Map<String, DeviceGrant> granted = grant.devices().stream().collect(Collectors.toMap(DeviceGrant::uuid, d -> d));
    assertThat(report.devices()).as(what + ": the process sees exactly its GPUs").extracting(d -> d.get("uuid")).containsExactlyInAnyOrderElementsOf(granted.keySet());
    for (Map<String, String> device : report.devices()) {
      DeviceGrant g = granted.get(device.get("uuid"));
      long bytes = (long) g.memoryMiB() << 20;
      String on = what + " on " + g.uuid();
      assertThat(Long.parseLong(device.get("total"))).as(on + ": cuMemGetInfo total").isEqualTo(bytes);
      assertThat(Long.parseLong(device.get("device_total"))).as(on + ": cuDeviceTotalMem").isEqualTo(bytes);
      assertThat(Long.parseLong(device.get("nvml_total"))).as(on + ": NVML total").isEqualTo(bytes);
      assertThat(Long.parseLong(device.get("region_memory_limit"))).as(on + ": region limit").isEqualTo(bytes);
      assertThat(Integer.parseInt(device.get("alloc_over_free"))).as(on + ": one byte past free").isEqualTo(CUDA_ERROR_OUT_OF_MEMORY);
      assertThat(Integer.parseInt(device.get("alloc_free"))).as(on + ": exactly free").isEqualTo(CUDA_SUCCESS);
      assertThat(Integer.parseInt(device.get("region_sm_limit"))).as(on + ": compute share").isEqualTo(g.cores() >= 100 ? 0 : g.cores());
    }
    Map<String, String> region = report.region();
    assertThat(region.get("source")).as(what).isEqualTo(limitsSource);
    assertThat(region.get("policy")).as(what).isEqualTo(allocation.env().getOrDefault("GPU_CORE_UTILIZATION_POLICY", "default"));
    assertThat(region.get("priority")).as(what).isEqualTo(allocation.env().getOrDefault("CUDA_TASK_PRIORITY", "0"));
    assertThat(region.get("oversubscribe")).as(what).isEqualTo(allocation.env().containsKey("CUDA_OVERSUBSCRIBE") ? "1" : "0");
  }

  /** grant-report's output: one {@code device N key=value...} line per CUDA ordinal and one {@code region key=value...} line. */
  private record Report(List<Map<String, String>> devices, Map<String, String> region) {
    static Report parse(String text) {
      List<Map<String, String>> devices = new ArrayList<>();
      Map<String, String> region = new HashMap<>();
      for (String line : text.split("\n")) {
        if (line.startsWith("device ")) {
          devices.add(fields(line.substring(line.indexOf(' ', 7) + 1)));
        } else if (line.startsWith("region ")) {
          // source= is last and may contain spaces
          int source = line.indexOf(" source=");
          region.putAll(fields(line.substring(7, source)));
          region.put("source", line.substring(source + 8));
        }
      }
      return new Report(devices, region);
    }

    private static Map<String, String> fields(String text) {
      Map<String, String> out = new LinkedHashMap<>();
      for (String field : text.trim().split(" ")) {
        int equals = field.indexOf('=');
        out.put(field.substring(0, equals), field.substring(equals + 1));
      }
      return out;
    }
  }
}
