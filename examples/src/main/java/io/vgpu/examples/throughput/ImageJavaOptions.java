package io.vgpu.examples.throughput;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The JVM options vgpu's image starts every program with: its Dockerfile's {@code ENTRYPOINT}, a JSON
 * array {@code ["…/java", options…, "-cp", …]} (or an argument file, {@code @file}, for the class path),
 * read so that the benchmark runs the scheduler's JVM as a deployment runs it (its collector and heap
 * sizing change the CPU a pod costs).
 */
final class ImageJavaOptions {
  private ImageJavaOptions() {}

  /** The options between {@code java} and {@code -cp} (or an argument file) in the ENTRYPOINT of {@code dockerfile}. */
  static List<String> read(Path dockerfile) {
    List<String> lines;
    try {
      lines = Files.readAllLines(dockerfile);
    } catch (IOException e) {
      throw new UnavailableException("cannot read the image's JVM options from " + dockerfile + ": " + e.getMessage());
    }
    String entrypoint = null;
    for (String line : lines) {
      if (line.startsWith("ENTRYPOINT ")) {
        entrypoint = line.substring("ENTRYPOINT ".length()).trim();
      }
    }
    if (entrypoint == null) {
      throw new UnavailableException(dockerfile + " has no ENTRYPOINT line");
    }
    return options(entrypoint, dockerfile.toString());
  }

  /** Whether the options start the JVM with an ahead-of-time cache of the image's ({@code -XX:AOTCache=}). */
  static boolean namesAotCache(List<String> options) {
    return options.stream().anyMatch(ImageJavaOptions::isAotCache);
  }

  /** The options without the image's AOT cache, a file that exists only inside the image. */
  static List<String> withoutAotCache(List<String> options) {
    return options.stream().filter(o -> !isAotCache(o)).toList();
  }

  private static boolean isAotCache(String option) {
    return option.startsWith("-XX:AOTCache=");
  }

  /** The options of an ENTRYPOINT's JSON array, named {@code where} in errors. */
  static List<String> options(String entrypoint, String where) {
    JsonNode array;
    try {
      array = JsonMapper.builder().build().readTree(entrypoint);
    } catch (JacksonException e) {
      throw new UnavailableException(where + ": ENTRYPOINT " + entrypoint + " is not a JSON array (the exec form)");
    }
    if (!array.isArray() || array.isEmpty() || !array.get(0).asString().endsWith("/java")) {
      throw new UnavailableException(where + ": ENTRYPOINT " + entrypoint + " does not start a java program");
    }
    List<String> out = new ArrayList<>();
    for (int i = 1; i < array.size(); i++) {
      String arg = array.get(i).asString();
      if (arg.equals("-cp") || arg.equals("-classpath") || arg.equals("-jar") || !arg.startsWith("-")) {
        break;
      }
      out.add(arg);
    }
    return List.copyOf(out);
  }
}
