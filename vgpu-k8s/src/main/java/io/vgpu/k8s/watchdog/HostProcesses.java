package io.vgpu.k8s.watchdog;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The host's processes as the watchdog needs them: whose cgroup each is in, and SIGKILL. The node
 * agent runs in the host's PID namespace ({@code hostPID: true}), so NVML's PIDs are its PIDs and
 * {@code /proc} is the host's.
 */
public interface HostProcesses {
  /**
   * The contents of {@code /proc/<pid>/cgroup}.
   *
   * @return the text, or empty when the process is gone
   */
  Optional<String> cgroupOf(int pid);

  /**
   * Sends SIGKILL to {@code pid} if it is still the process of {@code owner}: the PID is pinned (with
   * its start time) before its cgroup is read again, so a PID the kernel handed to another process
   * meanwhile is never signalled.
   *
   * @return whether the signal was sent
   */
  boolean kill(int pid, KubeletCgroup owner);

  /** This host's {@code /proc}. */
  static HostProcesses procfs() {
    return Procfs.INSTANCE;
  }

  /** The real thing: {@code /proc} and {@link ProcessHandle}. */
  final class Procfs implements HostProcesses {
    private static final Procfs INSTANCE = new Procfs();
    /** A cgroup file is a few hundred bytes; more is not a cgroup file. */
    private static final int MAX_CGROUP_FILE = 64 * 1024;

    private Procfs() {}

    @Override
    public Optional<String> cgroupOf(int pid) {
      try {
        byte[] bytes = Files.readAllBytes(Path.of("/proc", Integer.toString(pid), "cgroup"));
        return bytes.length > MAX_CGROUP_FILE ? Optional.empty() : Optional.of(new String(bytes, StandardCharsets.UTF_8));
      } catch (IOException e) {
        return Optional.empty();
      }
    }

    @Override
    public boolean kill(int pid, KubeletCgroup owner) {
      if (pid <= 1 || pid == ProcessHandle.current().pid()) {
        return false;
      }
      // ProcessHandle records the start time; destroyForcibly signals only a process that still has it.
      Optional<ProcessHandle> handle = ProcessHandle.of(pid);
      if (handle.isEmpty() || !cgroupOf(pid).flatMap(KubeletCgroup::ofProcFile).equals(Optional.of(owner))) {
        return false;
      }
      return handle.get().destroyForcibly();
    }
  }
}
