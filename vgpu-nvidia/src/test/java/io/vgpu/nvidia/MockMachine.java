package io.vgpu.nvidia;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The mock GPU machine of vgpu-native as the tagged surefire executions configure it: the mock
 * libnvidia-ml.so.1 found through {@code jna.library.path}, a device-list file in {@code
 * VGPU_MOCK_CONFIG} and a state file in {@code VGPU_MOCK_STATE}.
 */
final class MockMachine {
  private MockMachine() {}

  /** vgpu-native's output directory, from the surefire configuration. */
  static Path nativeDirectory() {
    return Path.of(System.getProperty("vgpu.test.native", "../vgpu-native/target/native")).toAbsolutePath().normalize();
  }

  /** vgpu-native's conformance program, whose helper roles act as GPU processes. */
  static Path conformanceProgram() {
    return nativeDirectory().resolveSibling("build").resolve("tests/vgpu-conformance");
  }

  /** Whether vgpu-native built this library (it needs a C compiler). */
  static boolean built(String library) {
    return Files.isRegularFile(nativeDirectory().resolve(library));
  }

  /** Skips the calling test, with the reason, when vgpu-native was not built (no C compiler). */
  static void assumeBuilt(String library) {
    assumeTrue(built(library), nativeDirectory().resolve(library) + " was not built (vgpu-native needs a C compiler): skipped");
  }

  /**
   * Starts from a fresh shared state (before the first nvmlInit); returns false, doing nothing, when the
   * mock NVML was not built, so that each test then skips with {@link #assumeBuilt}.
   */
  static boolean prepare() {
    if (!built(Nvml.LIBRARY)) {
      return false;
    }
    String state = System.getenv("VGPU_MOCK_STATE");
    if (state == null || System.getenv("VGPU_MOCK_CONFIG") == null) {
      throw new IllegalStateException("run through its surefire execution: VGPU_MOCK_CONFIG and VGPU_MOCK_STATE are not set");
    }
    try {
      Files.deleteIfExists(Path.of(state));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return true;
  }

  /** The GPUs of the device-list file in {@code VGPU_MOCK_CONFIG}: each line's {@code key=value} fields. */
  static List<Map<String, String>> deviceList() {
    List<Map<String, String>> out = new ArrayList<>();
    try {
      for (String line : Files.readAllLines(Path.of(System.getenv("VGPU_MOCK_CONFIG")))) {
        if (line.isBlank() || line.startsWith("#")) {
          continue;
        }
        Map<String, String> fields = new LinkedHashMap<>();
        for (String field : line.trim().split("\\s+")) {
          int equals = field.indexOf('=');
          fields.put(field.substring(0, equals), field.substring(equals + 1));
        }
        out.add(fields);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out;
  }

  /** The failure injection the mock NVML exports. */
  interface Control extends Library {
    int vgpuMockSetDeviceLost(int physicalIndex, int lost);

    int vgpuMockRaiseXid(int physicalIndex, long xid);
  }

  /** The mock's failure injection, bound to the same loaded library. */
  static Control control() {
    return Native.load(Nvml.LIBRARY, Control.class);
  }
}
