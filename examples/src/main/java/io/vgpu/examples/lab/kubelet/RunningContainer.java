package io.vgpu.examples.lab.kubelet;

import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * One started container process: its ID, its output, how it ended. Stopping it stops every process of
 * its cgroup and every descendant (the probe's children included).
 */
public final class RunningContainer {
  /** The line the probe writes to stderr when it has run all its ops. */
  public static final String OPS_COMPLETE = "vgpu-lab-probe: ops complete";
  private static final int SIGNAL_BASE = 128;

  private final String id;
  private final ContainerSpec spec;
  private final Process process;
  private final Path stdout;
  private final Path stderr;
  private final String cgroup;
  private final CgroupPlacement cgroups;
  private final Instant startedAt = Instant.now();
  /** When each stdout line was first seen, in order (a shared poller reads every container's output). */
  private final List<Instant> lineTimes = new ArrayList<>();
  private long readBytes;

  RunningContainer(String id, ContainerSpec spec, Process process, Path stdout, Path stderr, String cgroup, CgroupPlacement cgroups) {
    this.id = id;
    this.spec = spec;
    this.process = process;
    this.stdout = stdout;
    this.stderr = stderr;
    this.cgroup = cgroup;
    this.cgroups = cgroups;
  }

  /** The container ID (64 hex digits). */
  public String id() {
    return id;
  }

  /** What was started. */
  public ContainerSpec spec() {
    return spec;
  }

  /** The container's first process. */
  public long pid() {
    return process.pid();
  }

  /** When it started. */
  public Instant startedAt() {
    return startedAt;
  }

  /** Its cgroup path, as {@code /proc/<pid>/cgroup} shows it. */
  public String cgroup() {
    return cgroup;
  }

  /** The file its stdout goes to. */
  public Path stdoutFile() {
    return stdout;
  }

  /** Whether the first process is alive. */
  public boolean alive() {
    return process.isAlive();
  }

  /** Waits for the first process to end. */
  public boolean waitFor(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The exit code as a container runtime reports it: 128 + signal for a process killed by a signal. */
  public int exitCode() {
    return process.exitValue();
  }

  /** The signal that ended the process, or 0 (exit codes 129-192 are read as signals, as runtimes report them). */
  public int signal() {
    int code = process.exitValue();
    return code > SIGNAL_BASE && code <= SIGNAL_BASE + 64 ? code - SIGNAL_BASE : 0;
  }

  /** When the process printed its last stdout line, if it printed any. */
  public synchronized Optional<Instant> lastOutputAt() {
    pollOutput();
    return lineTimes.isEmpty() ? Optional.empty() : Optional.of(lineTimes.get(lineTimes.size() - 1));
  }

  /** Notes the arrival time of new complete lines on stdout (called every few milliseconds). */
  synchronized void pollOutput() {
    try {
      long size = Files.size(stdout);
      if (size <= readBytes) {
        return;
      }
      byte[] all = Files.readAllBytes(stdout);
      Instant now = Instant.now();
      for (long i = readBytes; i < all.length; i++) {
        if (all[(int) i] == '\n') {
          lineTimes.add(now);
          readBytes = i + 1;
        }
      }
    } catch (IOException e) {
      // not there yet
    }
  }

  /** The JSON lines the process printed on stdout, in order (other lines are skipped). */
  public List<JsonNode> observed() {
    List<JsonNode> out = new ArrayList<>();
    for (String line : lines(stdout)) {
      String t = line.trim();
      if (!t.startsWith("{")) {
        continue;
      }
      try {
        out.add(PodJson.mapper().readTree(t));
      } catch (JacksonException e) {
        // a partial line of a process killed mid-write
      }
    }
    return out;
  }

  /** Whether the probe reported all its ops done. */
  public boolean opsComplete() {
    return lines(stderr).stream().anyMatch(l -> l.trim().equals(OPS_COMPLETE));
  }

  /** The last lines of stderr (why a container failed). */
  public List<String> stderrTail(int n) {
    List<String> all = lines(stderr);
    return all.subList(Math.max(0, all.size() - n), all.size());
  }

  private static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      return List.of();
    }
  }

  /**
   * Stops the container as kubelet does: SIGTERM to every process, SIGKILL after the grace period.
   * Returns when its first process is gone.
   */
  public void stop(Duration grace) {
    signalAll(false);
    try {
      if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        signalAll(true);
        process.waitFor(5, TimeUnit.SECONDS);
      }
      // children that outlive the first process (a probe's spawned workers) go too
      long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
      while (!members().isEmpty() && System.nanoTime() < deadline) {
        signalAll(true);
        Thread.sleep(10);
      }
    } catch (InterruptedException e) {
      signalAll(true);
      Thread.currentThread().interrupt();
    }
  }

  /** Every process of the container: its cgroup's members and the first process's descendants. */
  private Set<ProcessHandle> members() {
    Set<ProcessHandle> out = new LinkedHashSet<>();
    if (process.isAlive()) {
      out.add(process.toHandle());
    }
    process.toHandle().descendants().forEach(out::add);
    for (long pid : cgroups.pids(cgroup)) {
      ProcessHandle.of(pid).ifPresent(out::add);
    }
    out.removeIf(p -> !p.isAlive());
    return out;
  }

  private void signalAll(boolean kill) {
    for (ProcessHandle p : members()) {
      if (kill) {
        p.destroyForcibly();
      } else {
        p.destroy();
      }
    }
  }
}
