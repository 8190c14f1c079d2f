package io.vgpu.examples;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * What the AOT-cache tests run the scheduler with: JDK 25 where this project's machines keep their second
 * JDK, and vgpu-k8s's jar with its runtime class path as its build leaves them (a cache is made for jars
 * only, and this module's own classes are still directories while it tests).
 */
public final class SchedulerJars {
  /** The JDK 25 home of the project's machines. */
  public static final Path JDK_25 = Path.of("/usr/lib/jvm/temurin-25-jdk-amd64");

  private SchedulerJars() {}

  /** The scheduler's jars, vgpu-k8s's first; skips the test where JDK 25 or the packaged jars are missing. */
  public static List<Path> onJdk25() throws IOException {
    assumeTrue(Files.isDirectory(JDK_25), "no JDK 25 at " + JDK_25);
    Path k8s = Path.of("..", "vgpu-k8s", "target").toAbsolutePath().normalize();
    Path classPath = k8s.resolve("classpath.txt");
    List<Path> jars = new ArrayList<>();
    try (Stream<Path> files = Files.list(k8s)) {
      files.filter(f -> f.getFileName().toString().matches("vgpu-k8s-.*\\.jar") && !f.getFileName().toString().endsWith("-sources.jar")).forEach(jars::add);
    }
    assumeTrue(Files.isRegularFile(classPath) && jars.size() == 1, "vgpu-k8s is not packaged in " + k8s);
    for (String jar : Files.readString(classPath, StandardCharsets.UTF_8).trim().split(File.pathSeparator)) {
      jars.add(Path.of(jar));
    }
    return jars;
  }
}
