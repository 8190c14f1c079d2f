package io.vgpu.k8s.watchdog;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Real processes placed as kubelet and the container runtime place a container's: each in a cgroup
 * named {@code <prefix>/kubepods/besteffort/pod<uid>/<containerID>} (cgroupfs names, behind a prefix as
 * in the lab), holding memory on vgpu-native's mock GPU through the mock libcuda ({@code
 * src/test/resources/native/hold_memory.c}, linked around any interposer, as an escaping process
 * would allocate). The cgroups go in cgroup v1's {@code pids} hierarchy, else cgroup v2; a test skips,
 * with the reason, where neither is writable, there is no C compiler, or no mock driver was built.
 */
final class ContainerProcesses implements AutoCloseable {
  static final Path NATIVE = Path.of(System.getProperty("jna.library.path", "../vgpu-native/target/native")).toAbsolutePath().normalize();

  private final Path program;
  private final Path base;
  private final List<Process> processes = new ArrayList<>();

  /**
   * Compiles the holder into {@code work} and creates this fixture's cgroup directory.
   *
   * @throws org.opentest4j.TestAbortedException (skipping the test) when the machine cannot do it
   */
  ContainerProcesses(Path work) throws IOException, InterruptedException {
    assumeTrue(Files.exists(NATIVE.resolve("libcuda.so.1")), NATIVE + " has no mock driver (vgpu-native needs a C compiler): skipped");
    assumeTrue(System.getenv("VGPU_MOCK_STATE") != null, "run through its surefire execution: VGPU_MOCK_STATE is not set");
    program = work.resolve("hold_memory");
    Path source = Path.of("src/test/resources/native/hold_memory.c").toAbsolutePath();
    Process cc;
    try {
      cc = new ProcessBuilder("cc", "-o", program.toString(), source.toString(), "-L" + NATIVE, "-lcuda").redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new org.opentest4j.TestAbortedException("no C compiler to build the holder: skipped");
    }
    String output = new String(cc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (cc.waitFor() != 0) {
      throw new IllegalStateException("cc failed: " + output);
    }
    Optional<Path> root = writableHierarchy();
    assumeTrue(root.isPresent(), "no writable cgroup hierarchy (pids on v1, or v2) to place processes as kubelet does: skipped");
    base = root.get().resolve("vgpu-watchdog-test-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
    try {
      Files.createDirectory(base);
    } catch (IOException e) {
      throw new org.opentest4j.TestAbortedException("cgroups are not writable here (" + e.getMessage() + "): skipped");
    }
  }

  /** The hierarchy to use: cgroup v1's pids controller, else cgroup v2; never v1's memory controller. */
  static Optional<Path> writableHierarchy() throws IOException {
    Path v2 = null;
    for (String line : Files.readAllLines(Path.of("/proc/self/mounts"))) {
      String[] f = line.split(" ");
      if (f.length < 4) {
        continue;
      }
      if (f[2].equals("cgroup") && List.of(f[3].split(",")).contains("pids") && f[3].startsWith("rw")) {
        return Optional.of(Path.of(f[1]));
      }
      if (f[2].equals("cgroup2") && f[3].startsWith("rw") && v2 == null) {
        v2 = Path.of(f[1]);
      }
    }
    return Optional.ofNullable(v2);
  }

  /** The cgroup path prefix this fixture's processes show, as a {@code /proc/<pid>/cgroup} line ends. */
  String prefix() {
    return "/" + base.getFileName();
  }

  /**
   * Starts a process in container {@code containerId} of pod {@code podUid} that allocates {@code mib}
   * on the mock GPU and holds it until killed; returns once it holds the memory.
   *
   * @param env added to the process's environment (e.g. {@code CUDA_VISIBLE_DEVICES})
   */
  Process hold(String podUid, String containerId, long mib, Map<String, String> env) throws IOException {
    Path cgroup = base.resolve("kubepods/besteffort/pod" + podUid + "/" + containerId);
    Files.createDirectories(cgroup);
    return start(List.of("sh", "-c", "echo $$ > \"$1/cgroup.procs\" && shift && exec \"$@\"", "sh", cgroup.toString(), program.toString(), Long.toString(mib)), env);
  }

  /** Starts a holder outside any pod's cgroup: a process on the node itself. */
  Process holdOnTheHost(long mib, Map<String, String> env) throws IOException {
    return start(List.of(program.toString(), Long.toString(mib)), env);
  }

  private Process start(List<String> command, Map<String, String> env) throws IOException {
    ProcessBuilder b = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    b.environment().put("LD_LIBRARY_PATH", NATIVE.toString());
    b.environment().putAll(env);
    Process p = b.start();
    processes.add(p);
    String first = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
    if (!"ready".equals(first)) {
      throw new IllegalStateException("the holder " + command + " did not get its memory (said " + first + ")");
    }
    return p;
  }

  /** Kills every process still running and removes the cgroups (a cgroup goes once it is empty). */
  @Override
  public void close() throws IOException, InterruptedException {
    for (Process p : processes) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    try (Stream<Path> walk = Files.walk(base)) {
      for (Path dir : walk.filter(Files::isDirectory).sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(dir);
      }
    }
  }
}
