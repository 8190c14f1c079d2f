package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The compiler threads' share of a process's CPU, read from /proc: this very JVM's. */
class ProcessMeterTest {
  private final ProcessMeter meter = new ProcessMeter(ProcessHandle.current().pid());

  @Test
  void thisJvmsCompilerThreadsAreFoundAndTheirTimeIsPartOfTheProcesss() {
    Map<Long, Long> ticks = meter.compilerTicks();
    assertThat(ticks).as("HotSpot's C1 and C2 compiler threads").isNotEmpty();
    double compiler = meter.compilerCpuMillisBetween(Map.of(), ticks);
    assertThat(compiler).isLessThanOrEqualTo(meter.cpuMillis());
  }

  @Test
  void aThreadStartedInBetweenCountsWholeAndOneRetiredCountsForNothing() {
    // 100 ticks per second on Linux: one tick is 10 ms.
    Map<Long, Long> before = Map.of(1L, 50L, 2L, 30L);
    Map<Long, Long> after = Map.of(1L, 80L, 3L, 7L);
    assertThat(meter.compilerCpuMillisBetween(before, after)).isEqualTo((30 + 7) * 1000.0 / ticksPerSecond());
    assertThat(meter.compilerCpuMillisBetween(after, after)).isZero();
    // A thread id reused by a new thread with fewer ticks never makes the figure negative.
    assertThat(meter.compilerCpuMillisBetween(Map.of(1L, 90L), Map.of(1L, 5L))).isZero();
  }

  private double ticksPerSecond() {
    return 1000.0 / meter.compilerCpuMillisBetween(Map.of(), Map.of(9L, 1L));
  }
}
