package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.examples.lab.LabHome;
import io.vgpu.k8s.cli.UnavailableException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The benchmark runs the scheduler's JVM with the options of vgpu's image. */
class ImageJavaOptionsTest {
  @Test
  void theOptionsAreThoseBetweenJavaAndTheClassPath() {
    assertThat(ImageJavaOptions.options("[\"/opt/vgpu/jre/bin/java\", \"-XX:+UseSerialGC\", \"-XX:MaxRAMPercentage=75\", \"-cp\", \"/opt/vgpu/lib/*\", \"io.vgpu.k8s.cli.Vgpu\"]", "Dockerfile"))
        .containsExactly("-XX:+UseSerialGC", "-XX:MaxRAMPercentage=75");
  }

  @Test
  void theOptionsEndAtAnArgumentFileAndTheImagesAotCacheIsLeftOutForTheBench() {
    List<String> options = ImageJavaOptions.options(
        "[\"/opt/vgpu/jre/bin/java\", \"-XX:+UseSerialGC\", \"-XX:AOTCache=/opt/vgpu/scheduler.aot\", \"@/opt/vgpu/classpath\", \"io.vgpu.k8s.cli.Vgpu\"]", "Dockerfile");
    assertThat(options).containsExactly("-XX:+UseSerialGC", "-XX:AOTCache=/opt/vgpu/scheduler.aot");
    assertThat(ImageJavaOptions.namesAotCache(options)).isTrue();
    assertThat(ImageJavaOptions.withoutAotCache(options)).containsExactly("-XX:+UseSerialGC");
    assertThat(ImageJavaOptions.namesAotCache(List.of("-XX:+UseSerialGC", "-XX:AOTCacheOutput=x.aot"))).as("writing a cache is not starting with one").isFalse();
  }

  @Test
  void theRepositorysImageIsRead() {
    List<String> options = ImageJavaOptions.read(LabHome.locate().root().resolve("images/vgpu/Dockerfile"));
    assertThat(options).contains("-XX:+UseSerialGC");
    assertThat(ImageJavaOptions.namesAotCache(options)).as("the image starts the scheduler with its AOT cache").isTrue();
  }

  @Test
  void aShellFormEntrypointIsOneLineNamingTheFile() {
    assertThatThrownBy(() -> ImageJavaOptions.options("java -XX:+UseSerialGC -cp x Main", "images/vgpu/Dockerfile"))
        .isInstanceOf(UnavailableException.class)
        .hasMessage("images/vgpu/Dockerfile: ENTRYPOINT java -XX:+UseSerialGC -cp x Main is not a JSON array (the exec form)");
  }
}
