package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.cli.Vgpu;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code vgpu throughput-bench} end to end at a small size: the real scheduler process over HTTPS, the
 * API server, kube-scheduler and kubelet stand-ins. Speed is not asserted here (the README's runs are
 * the benchmark); what is: every pod of the burst placed and bound exactly once, no card over-committed,
 * and the report's keys.
 */
class ThroughputBenchTest {
  @TempDir Path temp;

  @Test
  void aSmallBurstIsPlacedAndBoundOncePerPodWithTheReportedKeys() throws Exception {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    Path plot = temp.resolve("plot.svg");
    // Kept runs must be reachable by the containers' user, which JUnit's private temporary directory is not.
    Files.setPosixFilePermissions(temp, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path kept = temp.resolve("kept");
    int code = Vgpu.run(
        new String[] {"throughput-bench", "--nodes", "20", "--pods", "50", "--warmup", "5", "--rehearsal-pods", "10", "--output", "json", "--plot", plot.toString(), "--keep", kept.toString()},
        new PrintWriter(out, true),
        new PrintWriter(err, true));
    assertThat(code).as("exit code; stderr: %s; stdout: %s", err, out).isZero();

    JsonNode report = JsonMapper.builder().build().readTree(out.toString());
    assertThat(report.propertyNames())
        .contains("podsPerSecond", "schedulerCpuMsPerPod", "filterP99Ms", "bindP99Ms", "heapMiB", "enginePodsPerSecond");
    assertThat(report.path("nodes").asInt()).isEqualTo(20);
    assertThat(report.path("pods").asInt()).isEqualTo(50);
    assertThat(report.path("placed").asInt()).as("pods placed").isEqualTo(50);
    assertThat(report.path("binds").asInt()).as("binds accepted: one per pod").isEqualTo(50);
    assertThat(report.path("lost").asInt()).isZero();
    assertThat(report.path("overbookedCards").asInt()).isZero();
    assertThat(report.path("problems").isEmpty()).isTrue();
    for (String key : new String[] {"podsPerSecond", "schedulerCpuMsPerPod", "filterP99Ms", "bindP99Ms", "heapMiB", "enginePodsPerSecond"}) {
      assertThat(report.path(key).asDouble()).as(key).isPositive();
    }
    assertThat(report.path("filterP99Ms").asDouble()).isGreaterThanOrEqualTo(report.path("filterP50Ms").asDouble());
    // The JIT's share of the scheduler's CPU: a cold JVM compiles during its first burst.
    assertThat(report.path("schedulerJitCpuMsPerPod").asDouble()).isPositive().isLessThanOrEqualTo(report.path("schedulerCpuMsPerPod").asDouble());
    assertThat(report.path("schedulerJitCpuMsPerPodSteady").isNumber()).isTrue();
    // The stand-ins' JIT, likewise a part of their CPU.
    assertThat(report.path("standInJitCpuMsPerPod").asDouble()).isNotNegative().isLessThanOrEqualTo(report.path("standInCpuMsPerPod").asDouble());
    assertThat(report.path("standInJitCpuMsPerPodSteady").isNumber()).isTrue();
    // The steady state: a second burst as large as the first, after the warm-up and the first burst.
    assertThat(report.path("steadyPods").asInt()).isEqualTo(50);
    assertThat(report.path("steadyWarmupPods").asInt()).isEqualTo(55);
    assertThat(report.path("placedSteady").asInt()).isEqualTo(50);
    assertThat(report.path("bindsSteady").asInt()).isEqualTo(50);
    assertThat(report.path("lostSteady").asInt()).isZero();
    assertThat(report.has("steadySkipped")).isFalse();
    for (String key : new String[] {"schedulerCpuMsPerPodSteady", "standInCpuMsPerPodSteady", "filterP50MsSteady", "filterP99MsSteady", "burstSecondsSteady"}) {
      assertThat(report.path(key).asDouble()).as(key).isPositive();
    }
    assertThat(Files.readString(plot)).startsWith("<svg").contains("20");
    // The rehearsal ran before, in two rounds: each 10 pods onto 10 nodes, after a warm-up of one pod per node.
    assertThat(report.path("standInsPodsBefore").asInt()).isEqualTo(40);
    // --keep with a rehearsal: each run's scheduler log in a directory of its own.
    assertThat(kept.resolve("rehearsal/logs/scheduler.log")).isNotEmptyFile();
    assertThat(kept.resolve("rehearsal-2/logs/scheduler.log")).isNotEmptyFile();
    assertThat(kept.resolve("20-nodes/logs/scheduler.log")).isNotEmptyFile();
  }

  /** What the command printed to its error stream when it refused {@code args} (exit code 2), starting with "vgpu: ". */
  private static String refusal(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Vgpu.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).as("exit code of %s", String.join(" ", args)).isEqualTo(2);
    return err.toString();
  }

  @Test
  void aSteadyBurstLargerThanWhatWentBeforeItIsRefusedNamingTheOptions() {
    assertThat(refusal("throughput-bench", "--nodes", "20", "--pods", "50", "--warmup", "5", "--steady-pods", "56"))
        .startsWith("vgpu: --steady-pods 56 is more than the 55 pods before it (--warmup 5 and --pods 50): its warm-up must be at least as large");
  }

  @Test
  void theStandInsAreRehearsedByDefaultOnlyWhereTheFirstWarmUpIsShort() {
    assertThat(ThroughputBenchCommand.rehearsal(null, 10)).as("10 nodes: a warm-up of 10 pods").isEqualTo(1000);
    assertThat(ThroughputBenchCommand.rehearsal(null, 200)).as("5,000 nodes: the 200-pod warm-up warms them").isZero();
    assertThat(ThroughputBenchCommand.rehearsal(0, 10)).isZero();
    assertThat(ThroughputBenchCommand.rehearsal(50, 200)).isEqualTo(50);
  }

  @Test
  void optionsOutOfRangeAreRefusedNamingTheValue() {
    assertThat(refusal("throughput-bench", "--nodes", "20", "--stand-ins-nice", "20")).startsWith("vgpu: --stand-ins-nice 20 must be from 0 to 19");
    assertThat(refusal("throughput-bench", "--nodes", "20", "--rehearsal-pods", "-1")).startsWith("vgpu: --rehearsal-pods -1 must not be negative");
    assertThat(refusal("throughput-bench", "--nodes", "20", "--scheduler-java", "/nowhere/bin/java")).startsWith("vgpu: --scheduler-java /nowhere/bin/java is not an executable file");
  }
}
