package io.vgpu.examples.lab.components;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One real vgpu program run by the lab as its own process — {@code vgpu scheduler}, or {@code vgpu
 * device-plugin} of one node — with its log in a file. It can be stopped as kubelet stops a container
 * (SIGTERM, SIGKILL after a grace period) and started again with the same arguments.
 */
public final class ComponentProcess implements AutoCloseable {
  /** How long a stopped component may take to exit before it is killed (a restart's grace period). */
  public static final Duration STOP_GRACE = Duration.ofSeconds(5);
  private static final int LOG_TAIL_LINES = 20;

  private final String name;
  private final List<String> command;
  private final Map<String, String> environment;
  private final Path log;
  private @Nullable Process process;
  private int starts;

  /**
   * A component, not yet started.
   *
   * @param name how the lab names it, e.g. {@code scheduler} or {@code device-plugin/worker1}
   * @param command the whole command line (java, its options, the class path, the subcommand, its flags)
   * @param environment the environment the process gets on top of the lab's own
   * @param log the file its output is appended to
   */
  public ComponentProcess(String name, List<String> command, Map<String, String> environment, Path log) {
    this.name = name;
    this.command = List.copyOf(command);
    this.environment = Map.copyOf(environment);
    this.log = log;
  }

  /** How the lab names this component. */
  public String name() {
    return name;
  }

  /** The command line it runs. */
  public List<String> command() {
    return command;
  }

  /** Its log file. */
  public Path log() {
    return log;
  }

  /** Starts the process; its output goes to the log. */
  public synchronized void start() {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException(name + " is running");
    }
    starts++;
    try {
      Files.writeString(log, (starts == 1 ? "" : "\n") + "=== vgpu lab: start " + starts + " of " + name + " at " + Instant.now() + "\n",
          StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      builder.environment().putAll(environment);
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + name + ": " + e.getMessage(), e);
    }
  }

  /** The running process's pid, or -1. */
  public synchronized long pid() {
    return process == null ? -1 : process.pid();
  }

  /** Whether the process is running. */
  public synchronized boolean alive() {
    return process != null && process.isAlive();
  }

  /**
   * Waits until {@code ready} holds.
   *
   * @throws UnavailableException when the process exits first or the timeout passes; the message
   *     names the component and what it waited for, and the log's last lines are printed to stderr
   */
  public void awaitReady(BooleanSupplier ready, String what, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (!alive()) {
        throw failure(name + " exited with code " + exitCode() + " before " + what);
      }
      boolean ok;
      try {
        ok = ready.getAsBoolean();
      } catch (RuntimeException e) {
        ok = false;
      }
      if (ok) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw failure(name + " did not get " + what + " within " + timeout.toSeconds() + " s");
      }
      try {
        Thread.sleep(25);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new UnavailableException("interrupted while waiting for " + name);
      }
    }
  }

  /** An error about this component, with its log's last lines printed to stderr. */
  public UnavailableException failure(String message) {
    System.err.println("vgpu lab: last lines of " + log + ":");
    tail(LOG_TAIL_LINES).forEach(l -> System.err.println("  | " + l));
    return new UnavailableException(message + " (log: " + log + ")");
  }

  /** The last lines of the log. */
  public List<String> tail(int lines) {
    try {
      List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
      return new ArrayList<>(all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return List.of("(cannot read " + log + ": " + e.getMessage() + ")");
    }
  }

  private synchronized String exitCode() {
    return process == null || process.isAlive() ? "?" : Integer.toString(process.exitValue());
  }

  /** Stops the process: SIGTERM, then SIGKILL after {@link #STOP_GRACE}. Returns when it is gone. */
  public void stop() {
    Process p;
    synchronized (this) {
      p = process;
    }
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroy();
    try {
      if (!p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        p.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  /** Kills the process at once (the lab's emergency exit). */
  public synchronized void kill() {
    if (process != null) {
      process.destroyForcibly();
    }
  }

  @Override
  public void close() {
    stop();
  }
}
