package io.vgpu.examples.throughput;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.vgpu.examples.SchedulerJars;
import io.vgpu.examples.lab.components.JavaCommand;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The scheduler's AOT cache: trained by its warm-up alone, and one that a JDK 25 scheduler then starts with. */
class SchedulerAotCacheTest {
  @TempDir Path temp;

  @Test
  void onlyJavaTwentyFiveAndLaterMakeAndReadTheCache() {
    assertThat(SchedulerAotCache.supports("25.0.3")).isTrue();
    assertThat(SchedulerAotCache.supports("25")).isTrue();
    assertThat(SchedulerAotCache.supports("26-ea")).isTrue();
    assertThat(SchedulerAotCache.supports("17.0.15")).isFalse();
    assertThat(SchedulerAotCache.supports("21.0.5+11")).isFalse();
    assertThat(SchedulerAotCache.supports("unknown")).isFalse();
  }

  @Test
  void theWarmUpAloneTrainsACacheThatTheSchedulerStartsWith() throws Exception {
    JavaCommand java = schedulerOnJava25();
    Path cache = temp.resolve("scheduler.aot");

    SchedulerAotCache trained =
        SchedulerAotCache.train(java, List.of("-XX:+UseSerialGC"), List.of("scheduler", "--warm-up-rounds=100"), Map.of(), cache, temp.resolve("training.log"));

    assertThat(trained.file()).isRegularFile();
    assertThat(trained.trainingSeconds()).isPositive();
    assertThat(trained.option()).isEqualTo("-XX:AOTCache=" + cache);
    assertThat(Files.readString(temp.resolve("training.log"), StandardCharsets.UTF_8)).contains("warm-up only: 100 rounds over the loopback with TLS");
    // AOTMode=on: a JVM that cannot map the cache (another class path, other options) refuses to start.
    Process start = new ProcessBuilder(java.command("warn", List.of("-XX:+UseSerialGC", "-XX:AOTMode=on", trained.option()), List.of("--version")).command())
        .redirectErrorStream(true).start();
    String out = new String(start.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(start.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(start.exitValue()).as(out).isZero();
    assertThat(out).contains("vgpu ");
  }

  @Test
  void aTrainingRunThatFailsIsOneLineFromItsLog() throws Exception {
    JavaCommand java = schedulerOnJava25();

    IllegalStateException failed = catchThrowableOfType(IllegalStateException.class, () -> SchedulerAotCache.train(
        java, List.of("-XX:+UseSerialGC"), List.of("scheduler", "--warm-up-rounds=0"), Map.of(), temp.resolve("s.aot"), temp.resolve("training.log")));

    assertThat(failed).hasMessage("the scheduler's AOT training exited with 2: vgpu: --warm-up-only: --warm-up-rounds is 0, so there is nothing to run");
  }

  private static JavaCommand schedulerOnJava25() throws Exception {
    List<Path> jars = SchedulerJars.onJdk25();
    return JavaCommand.on(SchedulerJars.JDK_25.resolve("bin/java").toString(), String.join(File.pathSeparator, jars.stream().map(Path::toString).toList()), Optional.empty());
  }
}
