package io.vgpu.examples.throughput;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Lowers the CPU priority of this process, which runs the stand-ins of the cluster (API server,
 * kube-scheduler, kubelets), below the scheduler's. In a cluster they run on other machines; on a
 * benchmark machine of two cores they would otherwise take most of the CPU and the scheduler's
 * latencies would be mostly its wait for a core. Linux keeps a nice value per thread, so every thread
 * of this process is reniced; threads started later inherit it from the thread that starts them.
 */
final class StandInPriority {
  private StandInPriority() {}

  /** Renices every thread of this process by {@code increment} with {@code renice}. */
  static void lower(int increment) {
    List<String> command = new ArrayList<>(List.of("renice", "-n", Integer.toString(increment), "-p"));
    try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
      tasks.forEach(t -> command.add(t.getFileName().toString()));
    } catch (IOException e) {
      throw new UnavailableException("--stand-ins-nice needs Linux's /proc/self/task: " + e.getMessage());
    }
    try {
      Process renice = new ProcessBuilder(command).redirectErrorStream(true).start();
      String output = new String(renice.getInputStream().readAllBytes());
      if (renice.waitFor() != 0) {
        throw new UnavailableException("--stand-ins-nice: renice failed: " + output.strip());
      }
    } catch (IOException e) {
      throw new UnavailableException("--stand-ins-nice: cannot run renice: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted while renicing the stand-ins");
    }
  }
}
