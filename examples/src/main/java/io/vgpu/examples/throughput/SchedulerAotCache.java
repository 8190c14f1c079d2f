package io.vgpu.examples.throughput;

import io.vgpu.examples.lab.components.JavaCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * An ahead-of-time cache for the measured scheduler (JDK 25: JEP 483 and 515), trained the way an image
 * would train it: {@code vgpu scheduler --warm-up-only} under {@code -XX:AOTCacheOutput}, on the
 * scheduler's own Java, JVM options, class path and flags, so that the cache matches the run that reads it.
 * The warm-up alone reaches no cluster, so nothing of the measured run is seen in training.
 *
 * @param file the cache
 * @param trainingSeconds how long the training run took, the cache's writing included
 */
record SchedulerAotCache(Path file, double trainingSeconds) {
  /** Training is the warm-up's 20 s at most and the cache's writing: a run past this has hung. */
  private static final long TRAINING_TIMEOUT_SECONDS = 180;
  /** The first JDK whose AOT cache holds method profiles and is written by one run. */
  private static final int FIRST_RELEASE = 25;

  /** Whether a Java of this version ({@code java.version}, or a {@code release} file's) can make and read the cache. */
  static boolean supports(String javaVersion) {
    String feature = javaVersion.split("[.+-]", 2)[0];
    try {
      return Integer.parseInt(feature) >= FIRST_RELEASE;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  /** The scheduler's JVM option that reads the cache. */
  String option() {
    return "-XX:AOTCache=" + file;
  }

  /**
   * Runs the training and returns the cache it wrote.
   *
   * @param java the scheduler's Java
   * @param jvmOptions the scheduler's JVM options (without a cache of their own)
   * @param schedulerArgs the scheduler's subcommand and flags, to which {@code --warm-up-only} is added
   * @param environment the scheduler's environment
   * @param file where the cache goes
   * @param log the training run's output
   * @throws IllegalStateException when the run fails or writes no cache, with the reason its log gives
   */
  static SchedulerAotCache train(JavaCommand java, List<String> jvmOptions, List<String> schedulerArgs, Map<String, String> environment, Path file, Path log) {
    List<String> options = new ArrayList<>(jvmOptions);
    options.add("-XX:AOTCacheOutput=" + file);
    List<String> args = new ArrayList<>(schedulerArgs);
    args.add("--warm-up-only");
    ProcessBuilder builder = new ProcessBuilder(java.command("info", options, args).command())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.to(log.toFile()));
    builder.environment().putAll(environment);
    long start = System.nanoTime();
    try {
      Process training = builder.start();
      if (!training.waitFor(TRAINING_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        training.destroyForcibly();
        throw new IllegalStateException("the scheduler's AOT training did not end within " + TRAINING_TIMEOUT_SECONDS + " s (its log: " + log + ")");
      }
      if (training.exitValue() != 0 || !Files.isRegularFile(file)) {
        throw new IllegalStateException("the scheduler's AOT training " + (training.exitValue() != 0 ? "exited with " + training.exitValue() : "wrote no cache") + ": " + reason(log));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run the scheduler's AOT training: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while training the scheduler's AOT cache", e);
    }
    return new SchedulerAotCache(file, (System.nanoTime() - start) / 1e9);
  }

  /** The command line's own error (its last {@code vgpu:} line), else the log's last line: the JVM's AOT messages come after it. */
  private static String reason(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> !l.isBlank()).toList();
      List<String> own = lines.stream().filter(l -> l.startsWith("vgpu: ")).toList();
      if (!own.isEmpty()) {
        return own.get(own.size() - 1);
      }
      return lines.isEmpty() ? "(its log is empty)" : lines.get(lines.size() - 1);
    } catch (IOException e) {
      return "(its log cannot be read: " + e.getMessage() + ")";
    }
  }
}
