package io.vgpu.examples.lab.components;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The command line that runs the {@code vgpu} CLI in a new JVM, the way {@code ./vgpu} does: this JVM's
 * java and class path. Components are short-lived and started often, so the JVM is tuned for start-up:
 * C1 only, the serial collector, and an application class-data archive of the classes they load,
 * written by the first component that runs without one and shared by every later start. Class-data
 * archives only hold classes from jar files, so module class directories ({@code <module>/target/classes},
 * as {@code ./vgpu} runs them) are replaced by the module's jar of the same build when that jar is up
 * to date; otherwise the components run without an archive.
 */
public final class JavaCommand {
  private static final String MAIN_CLASS = "io.vgpu.k8s.cli.Vgpu";

  private final String java;
  private final String classPath;
  private final Optional<Path> archiveDirectory;

  /**
   * A command builder.
   *
   * @param archiveDirectory where class-data archives are kept between runs, or empty for none
   */
  public JavaCommand(Optional<Path> archiveDirectory) {
    this(ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()), System.getProperty("java.class.path"), archiveDirectory);
  }

  /**
   * A command builder like {@link #JavaCommand(Optional)} whose processes run on another Java: {@code
   * java}, the path of its {@code java} program.
   */
  public static JavaCommand on(String java, Optional<Path> archiveDirectory) {
    return new JavaCommand(java, System.getProperty("java.class.path"), archiveDirectory);
  }

  /**
   * A command builder whose processes run on {@code java} with {@code classPath} instead of this JVM's
   * (e.g. only the scheduler's jars, where this JVM's class path has class directories).
   */
  public static JavaCommand on(String java, String classPath, Optional<Path> archiveDirectory) {
    return new JavaCommand(java, classPath, archiveDirectory);
  }

  /** The version of the Java the processes run on (its {@code release} file's {@code JAVA_VERSION}), or empty when unknown. */
  public Optional<String> javaVersion() {
    try {
      Path bin = Path.of(java).toRealPath().getParent();
      Path home = bin == null ? null : bin.getParent();
      if (home == null) {
        return Optional.empty();
      }
      return releaseVersion(home.resolve("release"));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  private static Optional<String> releaseVersion(Path release) {
    try (Stream<String> lines = Files.lines(release)) {
      return lines.filter(l -> l.startsWith("JAVA_VERSION=")).map(l -> l.substring("JAVA_VERSION=".length()).replace("\"", "")).findFirst();
    } catch (IOException | UncheckedIOException e) {
      return Optional.empty();
    }
  }

  /** A command builder for {@code java} and {@code classPath} (class directories replaced by their jars where up to date). */
  JavaCommand(String java, String classPath, Optional<Path> archiveDirectory) {
    this.java = java;
    Optional<String> jars = jarsOnly(classPath);
    this.classPath = jars.orElse(classPath);
    this.archiveDirectory = jars.isPresent() ? archiveDirectory : Optional.empty();
  }

  /**
   * The command line of one component.
   *
   * @param logLevel the SLF4J level of the component's log
   * @param args the subcommand and its flags
   */
  public Launch command(String logLevel, List<String> args) {
    return command(logLevel, List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"), args);
  }

  /**
   * The command line of one component with JVM options of the caller's instead of the start-up tuning
   * (a benchmark runs the scheduler with the JVM's own ergonomics, as a deployment does). Options that
   * name a class-data archive or an AOT cache of their own leave out the shared archive.
   *
   * @param logLevel the SLF4J level of the component's log
   * @param jvmOptions the JVM's options
   * @param args the subcommand and its flags
   */
  public Launch command(String logLevel, List<String> jvmOptions, List<String> args) {
    List<String> out = new ArrayList<>();
    out.add(java);
    out.addAll(jvmOptions);
    Optional<Path> writing = Optional.empty();
    // Options that name an archive or an AOT cache of their own rule out the shared one (the JVM takes one).
    boolean ownArchive = jvmOptions.stream().anyMatch(o -> o.startsWith("-XX:AOTCache") || o.startsWith("-XX:AOTMode") || o.startsWith("-XX:SharedArchiveFile") || o.startsWith("-XX:ArchiveClassesAtExit"));
    Optional<Path> archive = ownArchive ? Optional.empty() : archive();
    if (archive.isPresent() && Files.isRegularFile(archive.get())) {
      out.add("-XX:SharedArchiveFile=" + archive.get());
      out.add("-Xlog:cds=off,cds+dynamic=off");
    } else if (archive.isPresent()) {
      Path partial = archive.get().resolveSibling(archive.get().getFileName() + "." + ProcessHandle.current().pid() + "." + System.nanoTime() + ".part");
      out.add("-XX:ArchiveClassesAtExit=" + partial);
      out.add("-Xlog:cds=off,cds+dynamic=off");
      writing = Optional.of(partial);
    }
    out.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=" + logLevel);
    out.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
    out.add("-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
    out.add("-cp");
    out.add(classPath);
    out.add(MAIN_CLASS);
    out.addAll(args);
    return new Launch(out, writing, archive);
  }

  /**
   * A command line, and the class-data archive its process writes when it exits, if any.
   *
   * @param command the command line
   * @param writing the partial archive the process writes at exit
   * @param archive where the finished archive belongs
   */
  public record Launch(List<String> command, Optional<Path> writing, Optional<Path> archive) {
    /** After the process exited: moves a complete archive into place (the first writer wins). */
    public void publishArchive() {
      if (writing.isEmpty() || archive.isEmpty()) {
        return;
      }
      try {
        if (Files.size(writing.get()) > 0 && !Files.exists(archive.get())) {
          Files.move(writing.get(), archive.get(), StandardCopyOption.ATOMIC_MOVE);
          try (Stream<Path> old = Files.list(archive.get().getParent())) {
            // archives of earlier builds are useless now
            old.filter(p -> p.getFileName().toString().endsWith(".jsa") && !p.equals(archive.get())).forEach(p -> p.toFile().delete());
          }
        }
      } catch (IOException e) {
        // no archive this time: the next run tries again
      } finally {
        try {
          Files.deleteIfExists(writing.get());
        } catch (IOException e) {
          // left behind
        }
      }
    }
  }

  /** The class path with every class directory replaced by its up-to-date jar, if each has one. */
  static Optional<String> jarsOnly(String classPath) {
    List<String> out = new ArrayList<>();
    for (String entry : classPath.split(File.pathSeparator)) {
      if (entry.isEmpty()) {
        continue;
      }
      Path path = Path.of(entry);
      if (!Files.isDirectory(path)) {
        out.add(entry);
        continue;
      }
      Optional<Path> jar = moduleJar(path);
      if (jar.isEmpty()) {
        return Optional.empty();
      }
      out.add(jar.get().toString());
    }
    return Optional.of(String.join(File.pathSeparator, out));
  }

  /** {@code <module>/target/<module>-<version>.jar} for {@code <module>/target/classes}, if no class is newer. */
  private static Optional<Path> moduleJar(Path classes) {
    Path target = classes.getParent();
    if (target == null || !classes.getFileName().toString().equals("classes") || target.getParent() == null) {
      return Optional.empty();
    }
    String module = target.getParent().getFileName().toString();
    try (Stream<Path> files = Files.list(target)) {
      Optional<Path> jar =
          files.filter(f -> {
                String n = f.getFileName().toString();
                return n.startsWith(module + "-") && n.endsWith(".jar") && !n.endsWith("-sources.jar") && !n.endsWith("-tests.jar") && !n.endsWith("-javadoc.jar");
              })
              .findFirst();
      if (jar.isEmpty()) {
        return Optional.empty();
      }
      FileTime built = Files.getLastModifiedTime(jar.get());
      try (Stream<Path> classFiles = Files.walk(classes)) {
        boolean stale = classFiles.anyMatch(f -> {
          try {
            return Files.getLastModifiedTime(f).compareTo(built) > 0;
          } catch (IOException e) {
            return true;
          }
        });
        return stale ? Optional.empty() : jar;
      }
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** The archive for this class path: archives are only valid for the class path they were made with. */
  private Optional<Path> archive() {
    if (archiveDirectory.isEmpty()) {
      return Optional.empty();
    }
    try {
      Files.createDirectories(archiveDirectory.get());
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      sha.update((java + "\n" + System.getProperty("java.version") + "\n" + classPath).getBytes(StandardCharsets.UTF_8));
      // An archive is only valid for the very jars it was made from: a rebuilt jar needs a new one.
      for (String entry : classPath.split(File.pathSeparator)) {
        Path jar = Path.of(entry);
        if (Files.isRegularFile(jar)) {
          sha.update((Files.size(jar) + ":" + Files.getLastModifiedTime(jar).toMillis() + "\n").getBytes(StandardCharsets.UTF_8));
        }
      }
      return Optional.of(archiveDirectory.get().resolve("vgpu-" + HexFormat.of().formatHex(sha.digest(), 0, 8) + ".jsa"));
    } catch (IOException | NoSuchAlgorithmException e) {
      return Optional.empty();
    }
  }
}
