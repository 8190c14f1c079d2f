package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WarmUpRoundsTest {
  @Test
  void tieredWithC2KeepsEveryRequestedRound() {
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("true"), Optional.of("4"))).isEqualTo(3000);
  }

  @Test
  void stoppingAtC1CutsTheRoundsToWhatC1Needs() {
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("true"), Optional.of("1"))).isEqualTo(WarmUpRounds.WITHOUT_C2);
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("true"), Optional.of("3"))).isEqualTo(WarmUpRounds.WITHOUT_C2);
    // Level 0 interprets only.
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("true"), Optional.of("0"))).isEqualTo(WarmUpRounds.WITHOUT_C2);
  }

  @Test
  void fewerRoundsThanTheCutAreKeptAsAsked() {
    assertThat(WarmUpRounds.forJit(200, true, Optional.of("true"), Optional.of("1"))).isEqualTo(200);
    assertThat(WarmUpRounds.forJit(0, false, Optional.empty(), Optional.empty())).isZero();
  }

  @Test
  void withoutAJitTheRoundsAreCut() {
    assertThat(WarmUpRounds.forJit(3000, false, Optional.of("true"), Optional.of("4"))).isEqualTo(WarmUpRounds.WITHOUT_C2);
  }

  @Test
  void withoutTiersHotSpotCompilesWithC2AloneWhateverTheStopLevel() {
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("false"), Optional.of("1"))).isEqualTo(3000);
  }

  @Test
  void aJvmThatDoesNotSayKeepsItsRounds() {
    assertThat(WarmUpRounds.forJit(3000, true, Optional.empty(), Optional.empty())).isEqualTo(3000);
    assertThat(WarmUpRounds.forJit(3000, true, Optional.of("true"), Optional.of("not a level"))).isEqualTo(3000);
  }

  @Test
  void readsTheRunningJvmsFlags() throws Exception {
    // Surefire's JVM runs with C2; a child started with C1 only, as the lab starts its components, cuts.
    assertThat(WarmUpRounds.forThisJvm(3000)).isEqualTo(3000);
    assertThat(childAnswer("-XX:TieredStopAtLevel=1")).isEqualTo(String.valueOf(WarmUpRounds.WITHOUT_C2));
    assertThat(childAnswer("-XX:+TieredCompilation")).isEqualTo("3000");
  }

  /** What {@link WarmUpRounds#forThisJvm} answers for 3,000 rounds in a JVM started with {@code flag}. */
  private static String childAnswer(String flag) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, flag, "-cp", System.getProperty("java.class.path"), Child.class.getName()).redirectErrorStream(true).start();
    assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
    List<String> lines = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    assertThat(child.exitValue()).as("child said %s", lines).isZero();
    return lines.get(lines.size() - 1);
  }

  /** The child JVM's entry point. */
  static final class Child {
    public static void main(String[] args) {
      System.out.println(WarmUpRounds.forThisJvm(3000));
    }
  }

  @Test
  void withoutAnAotCacheEveryRoundWrites() {
    // JDK 17 has none of the flags; JDK 25 has them, unset.
    assertThat(WarmUpRounds.roundsPerWritingRound(Optional.empty(), Optional.empty(), Optional.empty())).isEqualTo(1);
    assertThat(WarmUpRounds.roundsPerWritingRound(Optional.of(""), Optional.of(""), Optional.of(""))).isEqualTo(1);
  }

  @Test
  void trainingOrUsingAnAotCacheWritesEverySecondRound() {
    assertThat(WarmUpRounds.roundsPerWritingRound(Optional.of("/opt/vgpu/scheduler.aot"), Optional.of(""), Optional.of(""))).isEqualTo(2);
    assertThat(WarmUpRounds.roundsPerWritingRound(Optional.of(""), Optional.of("/tmp/scheduler.aot"), Optional.of(""))).isEqualTo(2);
    assertThat(WarmUpRounds.roundsPerWritingRound(Optional.of(""), Optional.of(""), Optional.of("/tmp/warm.aotconf"))).isEqualTo(2);
  }

  @Test
  void thisJvmWithoutAotFlagsWritesEveryRound() {
    // The tests run without a cache, as the bench's default scheduler does.
    assertThat(WarmUpRounds.roundsPerWritingRound()).isEqualTo(1);
  }
}
