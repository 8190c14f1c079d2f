package io.vgpu.examples.throughput;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one process (the scheduler's JVM) costs, read from outside it: CPU time from {@code
 * /proc/<pid>/stat} (user and system, every thread: request handling, informers, JIT and GC alike), and
 * its Java heap after a full collection from {@code jcmd}, the JDK's diagnostic command.
 */
final class ProcessMeter {
  private static final Pattern GENERATION = Pattern.compile("total (\\d+)K, used (\\d+)K");

  private final long pid;
  private final long ticksPerSecond;
  private final Path jcmd;

  /** A meter of {@code pid}, with the jcmd of the JDK this JVM runs on. */
  ProcessMeter(long pid) {
    this.pid = pid;
    this.ticksPerSecond = clockTicks();
    this.jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
  }

  /** User plus system CPU time the process has used so far, in milliseconds. */
  double cpuMillis() {
    String stat;
    try {
      stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
    } catch (IOException e) {
      throw new UnavailableException("cannot read /proc/" + pid + "/stat: " + e.getMessage());
    }
    return cpuTicks(stat) * 1000.0 / ticksPerSecond;
  }

  /** User plus system time in a {@code stat} line of /proc (a process's or one thread's), in clock ticks. */
  private static long cpuTicks(String stat) {
    // The command name (field 2) may hold spaces: the fields after it start past the last ')'.
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /**
   * CPU time each of the process's JIT compiler threads (HotSpot's {@code C1 CompilerThread} and {@code
   * C2 CompilerThread}) has used so far, in clock ticks by thread id: the part of {@link #cpuMillis} that
   * is the JVM compiling its code rather than running it. Compare two readings with {@link
   * #compilerCpuMillisBetween}.
   */
  Map<Long, Long> compilerTicks() {
    Path tasks = Path.of("/proc", Long.toString(pid), "task");
    Map<Long, Long> ticks = new HashMap<>();
    try (var threads = Files.list(tasks)) {
      for (Path task : (Iterable<Path>) threads::iterator) {
        String stat;
        try {
          stat = Files.readString(task.resolve("stat"));
        } catch (IOException e) {
          continue; // the thread ended between the listing and the read
        }
        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
          ticks.put(Long.parseLong(task.getFileName().toString()), cpuTicks(stat));
        }
      }
    } catch (IOException e) {
      throw new UnavailableException("cannot list " + tasks + ": " + e.getMessage());
    }
    return ticks;
  }

  /**
   * The compiler threads' CPU between two readings of {@link #compilerTicks}, in milliseconds. The JVM
   * starts and retires compiler threads as its queue grows and shrinks: a thread started in between
   * counts whole, one retired in between counts for nothing (its last ticks cannot be read), so the
   * figure may fall short but is never negative.
   */
  double compilerCpuMillisBetween(Map<Long, Long> before, Map<Long, Long> after) {
    long ticks = 0;
    for (Map.Entry<Long, Long> thread : after.entrySet()) {
      ticks += Math.max(0, thread.getValue() - before.getOrDefault(thread.getKey(), 0L));
    }
    return ticks * 1000.0 / ticksPerSecond;
  }

  /** The process's resident memory in MiB ({@code VmRSS}). */
  double residentMiB() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
        }
      }
    } catch (IOException e) {
      throw new UnavailableException("cannot read /proc/" + pid + "/status: " + e.getMessage());
    }
    return 0;
  }

  /** The Java heap in use after a full collection (what the process keeps), in MiB. */
  double heapAfterFullGcMiB() {
    jcmd("GC.run");
    return heapMiB(jcmd("GC.heap_info"));
  }

  /** Starts a Flight Recorder recording of the process, sampling methods as JFR's {@code profile} settings do. */
  void startRecording(Path file) {
    jcmd("JFR.start", "name=throughput-bench", "settings=profile", "filename=" + file.toAbsolutePath());
  }

  /** Stops that recording and writes it out. */
  void stopRecording() {
    jcmd("JFR.stop", "name=throughput-bench");
  }

  /** The sum of the generations' {@code used} in {@code GC.heap_info}'s output (metaspace is not heap). */
  static double heapMiB(String heapInfo) {
    Matcher m = GENERATION.matcher(heapInfo);
    long usedKiB = 0;
    boolean found = false;
    while (m.find()) {
      usedKiB += Long.parseLong(m.group(2));
      found = true;
    }
    if (!found) {
      throw new UnavailableException("jcmd GC.heap_info printed no heap usage: " + heapInfo.lines().findFirst().orElse(""));
    }
    return usedKiB / 1024.0;
  }

  private String jcmd(String... command) {
    List<String> line = new java.util.ArrayList<>(List.of(jcmd.toString(), Long.toString(pid)));
    line.addAll(List.of(command));
    try {
      Process p = new ProcessBuilder(line).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new UnavailableException("jcmd " + pid + " " + String.join(" ", command) + " failed: " + out.lines().findFirst().orElse(""));
      }
      return out;
    } catch (IOException e) {
      throw new UnavailableException("cannot run " + jcmd + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted while running jcmd");
    }
  }

  /** The kernel's clock ticks per second (USER_HZ), by which /proc counts CPU time. */
  private static long clockTicks() {
    try {
      Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      p.waitFor(10, TimeUnit.SECONDS);
      return Long.parseLong(out);
    } catch (IOException | NumberFormatException e) {
      return 100; // USER_HZ on every Linux architecture the JDK runs on
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 100;
    }
  }
}
