package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.WatchdogConfig;
import io.vgpu.k8s.grant.PodGrants;
import io.vgpu.nvidia.HookLayout;
import io.vgpu.nvidia.Nvml;
import io.vgpu.nvidia.NvidiaDeviceSource;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the watchdog costs on a busy node: eight GPUs, 60 GPU processes (30 containers of two processes,
 * each in its kubelet-named cgroup, every one mapped and held to its grant), polled back to back. It
 * measures the poller thread's CPU time per poll, split into NVML's part and the watchdog's own, and
 * writes the figures (and the share of one core at the default 1 s poll) to {@code
 * target/watchdog-cost.txt}: numbers to report in the README, not a timed assertion. What it asserts is
 * that every process was mapped and none acted on.
 */
@Tag("mock-watchdog")
class WatchdogCostTest {
  private static final int CONTAINERS = 30;
  private static final int PROCESSES_PER_CONTAINER = 2;
  private static final int GPUS = 8;
  private static final int WARM_UP = 50;
  private static final int MEASURED = 100;
  private static final int ROUNDS = 3;

  private static MemoryWatchdog watchdog(GpuProcesses gpus, List<Pod> pods, Path hook, List<String> events) {
    return new MemoryWatchdog(WatchdogConfig.DEFAULT, gpus, () -> pods, new HookLayout(hook.toString()), PodGrants.unverified(), "n1", HostProcesses.procfs(),
        (pod, reason, message) -> events.add(message), new WatchdogMetrics(), Clock.systemUTC());
  }

  /** The calling thread's CPU time per call, after a warm-up. */
  private static double cpuMicrosPerCall(Runnable call) {
    for (int i = 0; i < WARM_UP; i++) {
      call.run();
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long start = threads.getCurrentThreadCpuTime();
    for (int i = 0; i < MEASURED; i++) {
      call.run();
    }
    return (threads.getCurrentThreadCpuTime() - start) / 1e3 / MEASURED;
  }

  @Test
  void eightGpusAndSixtyProcessesCostAFractionOfAPercentOfACore(@TempDir Path work, @TempDir Path hook) throws Exception {
    try (ContainerProcesses processes = new ContainerProcesses(work);
        NvidiaDeviceSource source = new NvidiaDeviceSource(Nvml.open(), NvidiaDeviceSource.Options.DEFAULT)) {
      List<String> uuids = source.nvml().devices().stream().map(d -> d.uuid()).toList();
      assertThat(uuids).hasSize(GPUS);
      List<Pod> pods = new ArrayList<>();
      for (int c = 0; c < CONTAINERS; c++) {
        String uid = UUID.randomUUID().toString();
        String id = String.format(Locale.ROOT, "%064x", c + 1);
        int gpu = c % GPUS;
        pods.add(new PodBuilder()
            .withNewMetadata().withName("p" + c).withNamespace("team").withUid(uid)
            .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n1")
            .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, uuids.get(gpu) + ",NVIDIA,1024,10:;").endMetadata()
            .withNewSpec().addNewContainer().withName("gpu").endContainer().endSpec()
            .withNewStatus().withPhase("Running").addNewContainerStatus().withName("gpu").withContainerID("containerd://" + id).endContainerStatus().endStatus()
            .build());
        for (int p = 0; p < PROCESSES_PER_CONTAINER; p++) {
          processes.hold(uid, id, 64, Map.of("CUDA_VISIBLE_DEVICES", Integer.toString(gpu)));
        }
      }
      List<String> events = new ArrayList<>();
      GpuProcesses nvml = GpuProcesses.nvml(source);
      GpuProcesses.Sample sample = nvml.sample();
      assertThat(sample.processes()).hasSize(CONTAINERS * PROCESSES_PER_CONTAINER);
      assertThat(sample.unlisted()).isEmpty();
      MemoryWatchdog watchdog = watchdog(nvml, pods, hook, events);
      MemoryWatchdog ownWorkOnly = watchdog(() -> sample, pods, hook, events);

      // Interleaved rounds, the least of each: other processes on a shared machine only ever add to a thread's CPU time.
      double pollMicros = Double.MAX_VALUE;
      double nvmlMicros = Double.MAX_VALUE;
      double ownMicros = Double.MAX_VALUE;
      for (int round = 0; round < ROUNDS; round++) {
        pollMicros = Math.min(pollMicros, cpuMicrosPerCall(watchdog::poll));
        nvmlMicros = Math.min(nvmlMicros, cpuMicrosPerCall(nvml::sample));
        ownMicros = Math.min(ownMicros, cpuMicrosPerCall(ownWorkOnly::poll));
      }

      for (Pod pod : pods) {
        String uuid = pod.getMetadata().getAnnotations().get(HamiAnnotations.DEVICES_ALLOCATED).split(",")[0];
        assertThat(watchdog.nvmlBytes(pod.getMetadata().getUid(), "gpu", uuid)).as(pod.getMetadata().getName())
            .hasValue(PROCESSES_PER_CONTAINER * (64 + 64L) << 20);
      }
      assertThat(events).isEmpty();
      String report = String.format(Locale.ROOT,
          "memory watchdog, %d GPUs, %d GPU processes in %d containers, CPU time per poll (least of %d rounds of %d polls): %.0f us"
              + " (%.3f%% of one core at the default 1 s poll); of which listing the processes through the mock NVML %.0f us,"
              + " and the watchdog's own work (cgroups, pods, grants, judging) %.0f us%n",
          GPUS, CONTAINERS * PROCESSES_PER_CONTAINER, CONTAINERS, ROUNDS, MEASURED, pollMicros, pollMicros / 1e6 * 100, nvmlMicros, ownMicros);
      System.out.print(report);
      String file = System.getProperty("vgpu.watchdog.cost.report");
      if (file != null) {
        Files.writeString(Path.of(file), report, StandardCharsets.UTF_8);
      }
    }
  }
}
