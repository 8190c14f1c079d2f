package io.vgpu.k8s.deviceplugin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reads a region written by the real libvgpu.so over the mock driver, from a live process. */
class SharedRegionTest {
  static final Path NATIVE = Path.of("../vgpu-native/target/native").toAbsolutePath().normalize();

  @Test
  void readsWhatALiveContainerProcessCharges(@TempDir Path dir) throws Exception {
    assumeTrue(Files.exists(NATIVE.resolve("libvgpu.so")), "vgpu-native was not built (no C compiler)");
    Path source = Path.of("src/test/resources/native/hold_memory.c").toAbsolutePath();
    Path program = dir.resolve("hold_memory");
    Process cc = new ProcessBuilder("cc", "-o", program.toString(), source.toString(), "-L" + NATIVE, "-lcuda").inheritIO().start();
    assertThat(cc.waitFor()).isZero();

    Path region = dir.resolve("vgpu.shr");
    ProcessBuilder run = new ProcessBuilder(program.toString(), "256");
    run.environment().put("LD_LIBRARY_PATH", NATIVE.toString());
    run.environment().put("LD_PRELOAD", NATIVE.resolve("libvgpu.so").toString());
    run.environment().put("CUDA_DEVICE_MEMORY_LIMIT_0", "4096m");
    run.environment().put("CUDA_DEVICE_SM_LIMIT", "30");
    run.environment().put("CUDA_DEVICE_MEMORY_SHARED_CACHE", region.toString());
    run.environment().put("VGPU_MOCK_STATE", dir.resolve("mock.state").toString());
    run.redirectErrorStream(true);
    Process holder = run.start();
    try (BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
      assertThat(out.readLine()).isEqualTo("ready");
      List<SharedRegion.DeviceUsage> devices = SharedRegion.read(region).orElseThrow();
      assertThat(devices).hasSize(1);
      SharedRegion.DeviceUsage d = devices.get(0);
      assertThat(d.ordinal()).isZero();
      assertThat(d.uuid()).isEqualTo("GPU-12345678-1234-1234-1234-123456780000");
      assertThat(d.memoryLimit()).isEqualTo(4096L << 20);
      // the allocation plus the context's charge
      assertThat(d.memoryUsed()).isGreaterThanOrEqualTo(256L << 20).isLessThanOrEqualTo(4096L << 20);
      assertThat(d.memoryPeak()).isGreaterThanOrEqualTo(d.memoryUsed());
    } finally {
      holder.getOutputStream().close();
      holder.waitFor();
    }
  }

  @Test
  void anythingElseIsNotRead(@TempDir Path dir) throws Exception {
    Path junk = dir.resolve("junk");
    Files.write(junk, new byte[9000]);
    assertThat(SharedRegion.read(junk)).isEmpty();
    assertThat(SharedRegion.read(dir.resolve("missing"))).isEmpty();
  }
}
