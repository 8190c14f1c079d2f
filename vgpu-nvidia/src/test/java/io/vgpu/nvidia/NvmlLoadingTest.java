package io.vgpu.nvidia;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.spi.DeviceSourceException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A missing NVML is one clear message, never an UnsatisfiedLinkError and never a fallback. */
class NvmlLoadingTest {

  @Test
  void aMissingLibraryIsOneNvmlExceptionWithOneLine() {
    assertThatThrownBy(() -> Nvml.open(Path.of("/nonexistent/libnvidia-ml.so.1")))
        .isInstanceOfSatisfying(NvmlException.class, e -> {
          org.assertj.core.api.Assertions.assertThat(e.error()).isEqualTo(NvmlError.LIBRARY_NOT_FOUND);
          org.assertj.core.api.Assertions.assertThat(e.returnCode()).isEqualTo(12);
        })
        .hasMessage("/nonexistent/libnvidia-ml.so.1 does not exist: no NVML library to load")
        .hasNoCause();
  }

  @Test
  void theNvmlSourceReportsItAsADeviceSourceException() {
    assertThatThrownBy(() -> new NvidiaDeviceSourceProvider().create(Map.of("library", "/nonexistent/libnvidia-ml.so.1")))
        .isInstanceOf(DeviceSourceException.class)
        .hasMessage("/nonexistent/libnvidia-ml.so.1 does not exist: no NVML library to load");
  }

  @Test
  void aFileThatIsNoLibraryIsNamedWithTheLinkersReason() throws Exception {
    Path notALibrary = java.nio.file.Files.createTempFile("libnvidia-ml", ".so.1");
    try {
      assertThatThrownBy(() -> Nvml.open(notALibrary))
          .isInstanceOf(NvmlException.class)
          .hasMessageStartingWith(notALibrary + " cannot be loaded: ")
          .satisfies(e -> org.assertj.core.api.Assertions.assertThat(e.getMessage()).doesNotContain("\n"));
    } finally {
      java.nio.file.Files.delete(notALibrary);
    }
  }
}
