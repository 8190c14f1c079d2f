package io.vgpu.examples.lab.kubelet;

import io.vgpu.examples.lab.LabWorkspace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The lab's container runtime. A container is a process that starts in a private mount namespace
 * ({@code unshare --mount}) where, as root, it
 *
 * <ol>
 *   <li>puts an overlay with a tmpfs upper layer on {@code /etc}, and — when the NVIDIA runtime exposes
 *       GPUs — on the loader's library directory, so files can appear there without touching the host;
 *   <li>bind-mounts the node's mock driver libraries into that directory, as the NVIDIA runtime would;
 *   <li>applies the device plugin's mounts, parents before children as container runtimes order them,
 *       creating each target, read-only where the response says so ({@code /etc/ld.so.preload} and
 *       {@code /etc/vgpu/limits} land where a container finds them);
 *   <li>joins its cgroups, named as kubelet names them;
 *   <li>becomes an unprivileged user with no capabilities and no way to gain any, and runs the
 *       container's command with exactly the container's environment.
 * </ol>
 *
 * The container's own filesystem is the host's otherwise: the lab has no images. What a container may
 * write is what its user may write. A mount target that does not exist is created inside an overlay of
 * its deepest existing ancestor, so that no mount of the lab creates anything outside the run's
 * directory.
 */
public final class ContainerRuntime {
  /** The user container processes run as: nobody. */
  public static final int CONTAINER_UID = 65534;
  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.-]*");
  /** The loader's list of libraries to preload into every process. */
  private static final String PRELOAD_LIST = "/etc/ld.so.preload";
  private static final SecureRandom RANDOM = new SecureRandom();

  /** How often container output is looked at, to time when each line appeared. */
  private static final long OUTPUT_POLL_MILLIS = 20;

  private final LabWorkspace workspace;
  private final Set<RunningContainer> running = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService outputPoller = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "lab-container-output");
    t.setDaemon(true);
    return t;
  });
  private final CgroupPlacement cgroups;
  private final Path libraryDirectory;

  /**
   * A runtime.
   *
   * @param libraryDirectory where the container's loader finds driver libraries (e.g. {@code
   *     /usr/lib/x86_64-linux-gnu})
   */
  public ContainerRuntime(LabWorkspace workspace, CgroupPlacement cgroups, Path libraryDirectory) {
    this.workspace = workspace;
    this.cgroups = cgroups;
    this.libraryDirectory = libraryDirectory;
    outputPoller.scheduleWithFixedDelay(() -> {
      running.removeIf(c -> {
        c.pollOutput();
        return !c.alive();
      });
    }, OUTPUT_POLL_MILLIS, OUTPUT_POLL_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** Stops timing container output. */
  public void close() {
    outputPoller.shutdownNow();
  }

  /** The loader's library directory on this machine: where a runtime would put driver libraries. */
  public static Path defaultLibraryDirectory() {
    for (String candidate : List.of("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")) {
      if (Files.isDirectory(Path.of(candidate))) {
        return Path.of(candidate);
      }
    }
    return Path.of("/usr/lib");
  }

  /** The cgroups containers get. */
  public CgroupPlacement cgroups() {
    return cgroups;
  }

  /**
   * Starts a container.
   *
   * @throws IOException when the process cannot be started
   */
  public RunningContainer start(ContainerSpec spec) throws IOException {
    String id = HexFormat.of().formatHex(randomBytes());
    Path dir = workspace.directory("containers/" + spec.podNamespace() + "_" + spec.podName() + "_" + spec.container() + "_" + id.substring(0, 12));
    Path scratch = dir.resolve("scratch");
    Files.createDirectories(scratch);
    String cgroup = cgroups.containerPath(spec.qosClass(), spec.podUid(), id);
    List<Path> procs = cgroups.available() ? cgroups.prepare(cgroup) : List.of();
    Path script = dir.resolve("start.sh");
    Files.writeString(script, script(spec, scratch, procs));
    Path stdout = dir.resolve("stdout");
    Path stderr = dir.resolve("stderr");
    ProcessBuilder builder =
        new ProcessBuilder("unshare", "--mount", "--propagation", "private", "/bin/sh", script.toString())
            .redirectOutput(stdout.toFile())
            .redirectError(stderr.toFile());
    builder.environment().clear();
    builder.environment().put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    Process process = builder.start();
    RunningContainer container = new RunningContainer(id, spec, process, stdout, stderr, cgroup, cgroups);
    running.add(container);
    return container;
  }

  private static byte[] randomBytes() {
    byte[] bytes = new byte[32];
    RANDOM.nextBytes(bytes);
    return bytes;
  }

  private String script(ContainerSpec spec, Path scratch, List<Path> procs) throws IOException {
    StringBuilder s = new StringBuilder();
    s.append("# vgpu lab: container ").append(spec.podNamespace()).append('/').append(spec.podName()).append(' ').append(spec.container()).append('\n');
    s.append("set -e\n");
    s.append("mount -t tmpfs -o mode=0755 vgpu-lab ").append(q(scratch)).append('\n');
    overlay(s, "/etc", scratch.resolve("etc"));
    if (spec.driver().isPresent()) {
      overlay(s, libraryDirectory.toString(), scratch.resolve("lib"));
      for (Map.Entry<String, String> lib : spec.driver().get().libraries().entrySet()) {
        bind(s, lib.getValue(), libraryDirectory.resolve(lib.getKey()).toString(), true);
      }
    }
    List<ContainerSpec.Mount> mounts = new ArrayList<>(spec.mounts());
    List<Path> contained = containingOverlays(mounts, scratch, spec.driver().isPresent());
    for (int i = 0; i < contained.size(); i++) {
      overlay(s, contained.get(i).toString(), scratch.resolve("contain/" + i));
    }
    // Sources are host paths: runtimes resolve them on the host, before any of the container's own
    // mounts could shadow them (the per-container directory is mounted over <hook>/vgpu, where
    // libvgpu.so's source also lies). So every source is first staged under the scratch mount.
    for (int i = 0; i < mounts.size(); i++) {
      bind(s, mounts.get(i).hostPath(), scratch.resolve("sources/" + i).toString(), false);
    }
    // Parents before children: a mount on a/b must not be hidden by a later mount on a. Files have no
    // children, so they go after every directory, and /etc/ld.so.preload goes last: every command of
    // this set-up run after it would load the library it names, which must be in place by then.
    List<Integer> order = new ArrayList<>();
    for (int i = 0; i < mounts.size(); i++) {
      order.add(i);
    }
    order.sort(Comparator.<Integer>comparingInt(i -> Files.isDirectory(Path.of(mounts.get(i).hostPath())) ? 0 : 1)
        .thenComparingInt(i -> mounts.get(i).containerPath().equals(PRELOAD_LIST) ? 1 : 0)
        .thenComparingInt(i -> depth(mounts.get(i).containerPath())));
    for (int i : order) {
      ContainerSpec.Mount m = mounts.get(i);
      bind(s, scratch.resolve("sources/" + i).toString(), m.containerPath(), m.readOnly());
    }
    for (Path p : procs) {
      s.append("echo $$ > ").append(q(p)).append('\n');
    }
    s.append("cd /\n"); // a container's working directory when its image names none
    s.append("exec setpriv --reuid=").append(CONTAINER_UID).append(" --regid=").append(CONTAINER_UID)
        .append(" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- env -i");
    spec.env().entrySet().stream()
        .filter(e -> ENV_NAME.matcher(e.getKey()).matches())
        .sorted(Map.Entry.comparingByKey())
        .forEach(e -> s.append(' ').append(q(e.getKey() + "=" + e.getValue())));
    for (String arg : spec.command()) {
      s.append(' ').append(q(arg));
    }
    s.append('\n');
    return s.toString();
  }

  /**
   * The directories that get an overlay with a tmpfs upper layer so that the mount targets the runtime
   * must create (a pod's {@code /var/run/secrets/...}, an emptyDir's {@code /data}) appear in this
   * container only and never on the machine: for each target that does not exist and lies outside the
   * run's directory and the directories already overlaid, its deepest existing ancestor.
   *
   * @throws IOException for a target whose only existing ancestor is {@code /}, or one whose overlay would
   *     hide the run's own directory
   */
  private List<Path> containingOverlays(List<ContainerSpec.Mount> mounts, Path scratch, boolean driver) throws IOException {
    List<Path> covered = new ArrayList<>(List.of(Path.of("/etc"), workspace.root()));
    if (driver) {
      covered.add(libraryDirectory);
    }
    List<Path> out = new ArrayList<>();
    for (ContainerSpec.Mount m : mounts) {
      Path target = Path.of(m.containerPath()).normalize();
      if (Files.exists(target) || covered.stream().anyMatch(target::startsWith)
          || mounts.stream().anyMatch(o -> o != m && target.startsWith(Path.of(o.containerPath())) && !target.equals(Path.of(o.containerPath())))) {
        continue;
      }
      Path ancestor = target.getParent();
      while (ancestor != null && !Files.exists(ancestor)) {
        ancestor = ancestor.getParent();
      }
      Path real = ancestor == null ? Path.of("/") : ancestor.toRealPath();
      if (real.getParent() == null) {
        throw new IOException("cannot mount at " + m.containerPath() + ": the lab creates a missing mount target only inside an existing directory other than /");
      }
      if (scratch.toRealPath().startsWith(real)) {
        throw new IOException("cannot mount at " + m.containerPath() + ": creating it would hide the lab's run directory " + workspace.root());
      }
      if (out.stream().noneMatch(real::startsWith)) {
        out.removeIf(p -> p.startsWith(real));
        out.add(real);
        covered.add(real);
      }
    }
    return out;
  }

  private static void overlay(StringBuilder s, String target, Path layers) {
    String upper = layers.resolve("upper").toString();
    String work = layers.resolve("work").toString();
    s.append("mkdir -p ").append(q(upper)).append(' ').append(q(work)).append('\n');
    s.append("mount -t overlay vgpu-lab -o ").append(q("lowerdir=" + target + ",upperdir=" + upper + ",workdir=" + work)).append(' ').append(q(target)).append('\n');
  }

  private static void bind(StringBuilder s, String source, String target, boolean readOnly) {
    String src = q(source);
    String dst = q(target);
    // The target must exist, as runtimes create it: a directory for a directory, a file for a file.
    s.append("if [ -d ").append(src).append(" ]; then mkdir -p ").append(dst).append("; else mkdir -p \"$(dirname ").append(dst)
        .append(")\"; [ -e ").append(dst).append(" ] || : > ").append(dst).append("; fi\n");
    s.append("mount --bind ").append(src).append(' ').append(dst).append('\n');
    if (readOnly) {
      s.append("mount -o remount,bind,ro ").append(dst).append('\n');
    }
  }

  private static int depth(String path) {
    int n = 0;
    for (char c : path.toCharArray()) {
      n += c == '/' ? 1 : 0;
    }
    return n;
  }

  /** Single-quotes a word for sh. */
  static String q(Object word) {
    return "'" + word.toString().replace("'", "'\\''") + "'";
  }
}
