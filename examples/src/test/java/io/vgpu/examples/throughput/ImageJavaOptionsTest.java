package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.examples.lab.LabHome;
import io.vgpu.k8s.cli.UnavailableException;
import org.junit.jupiter.api.Test;

/** The benchmark runs the scheduler's JVM with the options of vgpu's image. */
class ImageJavaOptionsTest {
  @Test
  void theOptionsAreThoseBetweenJavaAndTheClassPath() {
    assertThat(ImageJavaOptions.options("[\"/opt/vgpu/jre/bin/java\", \"-XX:+UseSerialGC\", \"-XX:MaxRAMPercentage=75\", \"-cp\", \"/opt/vgpu/lib/*\", \"io.vgpu.k8s.cli.Vgpu\"]", "Dockerfile"))
        .containsExactly("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=75");
  }

  @Test
  void theRepositorysImageIsRead() {
    assertThat(ImageJavaOptions.read(LabHome.locate().root().resolve("images/vgpu/Dockerfile"))).contains("-XX:+UseSerialGC");
  }

  @Test
  void aShellFormEntrypointIsOneLineNamingTheFile() {
    assertThatThrownBy(() -> ImageJavaOptions.options("java -XX:+UseSerialGC -cp x Main", "images/vgpu/Dockerfile"))
        .isInstanceOf(UnavailableException.class)
        .hasMessage("images/vgpu/Dockerfile: ENTRYPOINT java -XX:+UseSerialGC -cp x Main is not a JSON array (the exec form)");
  }
}
