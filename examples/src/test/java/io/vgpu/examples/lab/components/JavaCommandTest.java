package io.vgpu.examples.lab.components;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A component's JVM: the shared class-data archive, unless the caller's options bring an archive or AOT cache of their own. */
class JavaCommandTest {
  @TempDir Path temp;

  private JavaCommand command() throws Exception {
    Path jar = temp.resolve("vgpu.jar");
    if (!Files.exists(jar)) {
      Files.write(jar, new byte[] {'P', 'K'});
    }
    // An archive is made for one class path of unchanged jars: the same jar, the same archive.
    return new JavaCommand("/opt/java/bin/java", jar.toString(), Optional.of(temp.resolve("cds")));
  }

  @Test
  void theFirstComponentWritesTheSharedArchiveAndLaterOnesReadIt() throws Exception {
    JavaCommand.Launch first = command().command("info", List.of("-XX:+UseSerialGC"), List.of("scheduler"));
    assertThat(first.command()).anyMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit=" + temp.resolve("cds")));
    assertThat(first.writing()).isPresent();
    Files.createDirectories(first.archive().orElseThrow().getParent());
    Files.write(first.archive().orElseThrow(), new byte[] {1});

    List<String> later = command().command("info", List.of("-XX:+UseSerialGC"), List.of("scheduler")).command();
    assertThat(later).contains("-XX:SharedArchiveFile=" + first.archive().orElseThrow()).noneMatch(o -> o.startsWith("-XX:ArchiveClassesAtExit"));
  }

  @Test
  void optionsWithAnAotCacheOrAnArchiveOfTheirOwnLeaveTheSharedOneOut() throws Exception {
    for (String own : List.of("-XX:AOTCacheOutput=/tmp/s.aot", "-XX:AOTCache=/tmp/s.aot", "-XX:SharedArchiveFile=/tmp/s.jsa", "-XX:ArchiveClassesAtExit=/tmp/s.jsa")) {
      JavaCommand.Launch launch = command().command("info", List.of("-XX:+UseSerialGC", own), List.of("scheduler"));
      assertThat(launch.command()).as(own).contains(own).filteredOn(o -> o.contains("Archive") || o.contains("AOT")).containsExactly(own);
      assertThat(launch.writing()).as(own).isEmpty();
    }
  }

  @Test
  void theJavaVersionIsTheOneItsReleaseFileNames() throws Exception {
    Path bin = Files.createDirectories(temp.resolve("jdk/bin"));
    Path java = Files.write(bin.resolve("java"), new byte[0]);
    Files.writeString(temp.resolve("jdk/release"), "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"25.0.3\"\n");
    assertThat(JavaCommand.on(java.toString(), Optional.empty()).javaVersion()).contains("25.0.3");
    assertThat(JavaCommand.on(temp.resolve("nowhere/bin/java").toString(), Optional.empty()).javaVersion()).isEmpty();
    assertThat(new JavaCommand(Optional.empty()).javaVersion()).as("this JVM's").contains(System.getProperty("java.version"));
  }
}
