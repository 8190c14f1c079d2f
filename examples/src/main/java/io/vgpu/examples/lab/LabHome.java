package io.vgpu.examples.lab;

import io.vgpu.k8s.cli.UnavailableException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Where the lab finds what it runs: the repository checkout it was built from (the reference
 * deployment's manifests, the suites) and vgpu-native's build output (the mock driver libraries and the
 * probe). The {@code ./vgpu} launcher passes {@code -Dvgpu.home}; otherwise the checkout is found from
 * where this class was loaded ({@code examples/target/classes}).
 *
 * @param root the checkout's root directory
 */
public record LabHome(Path root) {
  /** System property naming the checkout. */
  public static final String HOME_PROPERTY = "vgpu.home";

  /** The checkout this JVM runs from. */
  public static LabHome locate() {
    String property = System.getProperty(HOME_PROPERTY);
    if (property != null && !property.isEmpty()) {
      return new LabHome(Path.of(property).toAbsolutePath().normalize());
    }
    return fromCodeSource()
        .orElseThrow(() -> new UnavailableException("cannot tell where the vgpu checkout is: run the lab through ./vgpu, or pass -D" + HOME_PROPERTY + "=<checkout>"));
  }

  private static Optional<LabHome> fromCodeSource() {
    try {
      Path classes = Path.of(LabHome.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      // examples/target/classes or examples/target/examples-*.jar
      for (Path p = classes; p != null; p = p.getParent()) {
        if (Files.isRegularFile(p.resolve("mvnw")) && Files.isDirectory(p.resolve("examples"))) {
          return Optional.of(new LabHome(p));
        }
      }
    } catch (URISyntaxException | RuntimeException e) {
      // fall through: not found
    }
    return Optional.empty();
  }

  /** The reference deployment's manifests. */
  public Path deployDirectory() {
    return root.resolve("examples/deploy");
  }

  /** The reference deployment's manifests rendered with the chart's KAI values: vgpu under KAI Scheduler. */
  public Path kaiDeployDirectory() {
    return root.resolve("examples/deploy-kai");
  }

  /**
   * The reference deployment's manifests rendered with the chart's KAI-dialect values: vgpu scheduling
   * KAI's pods, queues and gangs itself ({@code vgpu.kaiDialect.enabled}, with KAI's CRDs).
   */
  public Path kaiDialectDeployDirectory() {
    return root.resolve("examples/deploy-kai-dialect");
  }

  /** Where the built-in suites live: one directory of scenarios per suite. */
  public Path suitesDirectory() {
    return root.resolve("examples/lab");
  }

  /** vgpu-native's build output. */
  public Path nativeDirectory() {
    return root.resolve("vgpu-native/target/native");
  }

  /**
   * A file of vgpu-native's build output.
   *
   * @throws UnavailableException when it has not been built
   */
  public Path nativeFile(String name) {
    Path file = nativeDirectory().resolve(name);
    if (!Files.isRegularFile(file)) {
      throw new UnavailableException(
          "the lab needs " + file + " from vgpu-native (build it with ./mvnw -B -DskipTests package; it needs gcc and make)");
    }
    return file;
  }
}
