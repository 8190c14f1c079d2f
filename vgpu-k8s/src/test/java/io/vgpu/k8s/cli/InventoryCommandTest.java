package io.vgpu.k8s.cli;

import static io.vgpu.k8s.cli.Run.vgpu;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.vgpu.mock.GpuProfile;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InventoryCommandTest {
  @TempDir Path temp;

  @Test
  void listsMockGpusWithTheRegisterValueOfTheDeviceConfig() throws IOException {
    Path config = temp.resolve("device-config.yaml");
    Files.writeString(config, "nvidia:\n  deviceSplitCount: 4\n  deviceMemoryScaling: 2\n");
    Run run = vgpu("inventory", "--source", "mock", "--mock-profile", "T4", "--mock-count", "2", "--device-config-file", config.toString(), "--output", "json");
    assertThat(run.err()).isEmpty();
    assertThat(run.code()).isZero();
    String uuid0 = MockDeviceSource.uuid(MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    String uuid1 = MockDeviceSource.uuid(MockDeviceSource.DEFAULT_UUID_PREFIX, 1);
    assertThat(run.out())
        .isEqualTo(
            """
            {
              "devices": [
                {
                  "uuid": "%s",
                  "index": 0,
                  "model": "Tesla T4",
                  "memoryMiB": 15360,
                  "numa": 0,
                  "health": true,
                  "pciBusId": "00000000:01:00.0"
                },
                {
                  "uuid": "%s",
                  "index": 1,
                  "model": "Tesla T4",
                  "memoryMiB": 15360,
                  "numa": 0,
                  "health": true,
                  "pciBusId": "00000000:02:00.0"
                }
              ],
              "register": "[{\\"id\\":\\"%s\\",\\"count\\":4,\\"devmem\\":30720,\\"devcore\\":100,\\"type\\":\\"NVIDIA-Tesla T4\\",\\"mode\\":\\"hami-core\\",\\"health\\":true},{\\"id\\":\\"%s\\",\\"index\\":1,\\"count\\":4,\\"devmem\\":30720,\\"devcore\\":100,\\"type\\":\\"NVIDIA-Tesla T4\\",\\"mode\\":\\"hami-core\\",\\"health\\":true}]"
            }
            """
                .formatted(uuid0, uuid1, uuid0, uuid1));
  }

  @Test
  void printsATableByDefault() {
    Run run = vgpu("inventory", "--source", "mock");
    assertThat(run.code()).isZero();
    assertThat(run.out())
        .startsWith("DEVICES\nINDEX  UUID                                      MODEL                  MEMORY MiB  NUMA  HEALTH  PCI BUS ID\n")
        .contains("0      GPU-12345678-1234-1234-1234-123456780000  NVIDIA A100-SXM4-40GB  40960       0     ok      00000000:01:00.0\n")
        .endsWith("\nREGISTER\nhami.io/node-nvidia-register: [{\"id\":\"GPU-12345678-1234-1234-1234-123456780000\",\"count\":10,\"devmem\":40960,\"devcore\":100,\"type\":\"NVIDIA A100-SXM4-40GB\",\"mode\":\"hami-core\",\"health\":true}]\n");
  }

  @Test
  void badInputIsOneLineAndExitCode2() {
    Run unknown = vgpu("inventory", "--source", "dcgm");
    assertThat(unknown.code()).isEqualTo(2);
    assertThat(unknown.err()).isEqualTo("vgpu: --source: unknown device source 'dcgm' (known: mock, nvml)\n");

    Run profile = vgpu("inventory", "--source", "mock", "--mock-profile", "B300");
    assertThat(profile.code()).isEqualTo(2);
    assertThat(profile.err()).startsWith("vgpu: --source mock: unknown GPU profile 'B300'; known profiles: ").doesNotContain("\tat ");
    assertThat(profile.err().lines()).hasSize(1);

    Run misplaced = vgpu("inventory", "--source", "nvml", "--mock-count", "2");
    assertThat(misplaced.code()).isEqualTo(2);
    assertThat(misplaced.err()).isEqualTo("vgpu: --mock-profile and --mock-count apply to --source mock only, not to --source nvml\n");

    Run format = vgpu("inventory", "--output", "yaml");
    assertThat(format.code()).isEqualTo(2);
    assertThat(format.err().lines()).hasSize(1);
  }

  /**
   * The command line in its own JVM, as {@code ./vgpu} runs it: the mock libnvidia-ml.so.1 found through
   * LD_LIBRARY_PATH lists the mock's GPUs exactly as the profile defines them; without it, one line.
   */
  @Test
  void theNvmlSourceListsTheMockDriversGpusAsTheProfileDefinesThem() throws Exception {
    Path nativeDir = Path.of("../vgpu-native/target/native").toAbsolutePath().normalize();
    assumeThat(nativeDir.resolve("libnvidia-ml.so.1")).as("vgpu-native was not built (no C compiler): skipped").isRegularFile();
    GpuProfile h100 = GpuProfiles.get("H100-SXM5-80GB");
    Run run = inOwnJvm(List.of("LD_LIBRARY_PATH=" + nativeDir, "VGPU_MOCK_CONFIG=" + h100.profile() + ":2", "VGPU_MOCK_STATE=" + temp.resolve("mock.state")), "inventory", "--output", "json");
    assertThat(run.err()).isEmpty();
    assertThat(run.code()).isZero();
    String uuid0 = MockDeviceSource.uuid(MockDeviceSource.DEFAULT_UUID_PREFIX, 0);
    assertThat(run.out())
        .contains("\"uuid\": \"" + uuid0 + "\",\n      \"index\": 0,\n      \"model\": \"" + h100.name() + "\",\n      \"memoryMiB\": " + h100.memoryMiB() + ",\n")
        .contains("\"index\": 1,")
        .contains("\"register\": \"[{\\\"id\\\":\\\"" + uuid0 + "\\\",\\\"count\\\":10,\\\"devmem\\\":" + h100.memoryMiB() + ",\\\"devcore\\\":100,\\\"type\\\":\\\"" + h100.name() + "\\\"");

    Run missing = inOwnJvm(List.of("LD_LIBRARY_PATH=" + temp), "inventory", "--source", "nvml");
    assumeThat(missing.code()).as("this machine has a real NVIDIA driver in the linker's path").isNotZero();
    assertThat(missing.code()).isEqualTo(2);
    assertThat(missing.err()).startsWith("vgpu: --source nvml: libnvidia-ml.so.1 (the NVIDIA driver's NVML) was not found in ");
    assertThat(missing.err().lines()).hasSize(1);
  }

  private Run inOwnJvm(List<String> environment, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(Vgpu.class.getName());
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().remove("LD_LIBRARY_PATH");
    for (String assignment : environment) {
      int equals = assignment.indexOf('=');
      builder.environment().put(assignment.substring(0, equals), assignment.substring(equals + 1));
    }
    Path out = temp.resolve("out");
    Path err = temp.resolve("err");
    Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new Run(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
  }
}
