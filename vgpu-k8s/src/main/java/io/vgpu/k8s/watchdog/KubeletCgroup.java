package io.vgpu.k8s.watchdog;

import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The pod and container a process belongs to, read from the cgroup kubelet and the container runtime
 * put it in ({@code /proc/<pid>/cgroup}). Both cgroup drivers, cgroup v1 and v2, behind any prefix (a
 * cgroup namespace shows {@code /..}, a nested node or a lab its own directories):
 *
 * <pre>
 * cgroupfs  .../kubepods[/besteffort|/burstable]/pod&lt;uid&gt;/&lt;id&gt;            (cri-o: crio-&lt;id&gt;)
 * systemd   .../kubepods[-besteffort|-burstable]-pod&lt;uid_with_underscores&gt;.slice/&lt;runtime&gt;-&lt;id&gt;.scope
 *           (cri-containerd-, docker-, crio-, ...; kind's nested kubelet adds a kubelet- prefix)
 * </pre>
 *
 * <p>Kubelet and the runtime write these paths; a process in an unprivileged container cannot move
 * itself out of its cgroup. Parsing is pure: reading {@code /proc} is {@link HostProcesses}'s job.
 *
 * @param podUid the pod's UID, with dashes
 * @param containerId the runtime's container ID, or empty when the process sits in the pod's cgroup
 *     but in no container's (the pod's own cgroup, cri-o's conmon)
 */
public record KubeletCgroup(String podUid, String containerId) {
  private static final Pattern CGROUPFS_POD = Pattern.compile("pod([0-9a-fA-F][0-9a-fA-F-]*)");
  private static final Set<String> CGROUPFS_POD_PARENTS = Set.of("kubepods", "besteffort", "burstable");
  private static final Pattern SYSTEMD_POD = Pattern.compile("(?:[\\w.-]+-)?kubepods(?:-besteffort|-burstable)?-pod([0-9a-fA-F_]+)\\.slice");
  private static final Pattern SYSTEMD_CONTAINER = Pattern.compile("(?:[a-z]+-)+([\\w.]+)\\.scope");
  private static final Pattern CONTAINER_ID = Pattern.compile("[A-Za-z0-9][\\w.-]*");

  /** Whether the cgroup is a container's, not only the pod's. */
  public boolean hasContainer() {
    return !containerId.isEmpty();
  }

  /**
   * The owner named by the contents of a {@code /proc/<pid>/cgroup} file: one {@code
   * id:controllers:path} line per hierarchy. Lines that name no pod are skipped (a v1 hierarchy the
   * runtime left alone; every pod cgroup kubelet names has {@code kubepods} in its path); lines that
   * name different owners make the answer empty rather than a guess.
   *
   * @return the owner, or empty for a process outside any pod, garbage, or contradicting lines
   */
  public static Optional<KubeletCgroup> ofProcFile(String content) {
    // cgroup v1 repeats one path for every controller: parse each distinct path once.
    Set<String> paths = new LinkedHashSet<>();
    for (String line : content.split("\n")) {
      int first = line.indexOf(':');
      int second = first < 0 ? -1 : line.indexOf(':', first + 1);
      if (second >= 0 && line.indexOf("kubepods", second) >= 0) {
        paths.add(line.substring(second + 1));
      }
    }
    Set<KubeletCgroup> owners = new LinkedHashSet<>();
    for (String path : paths) {
      ofPath(path).ifPresent(owners::add);
    }
    // A container's cgroup and its pod's own (another hierarchy left at pod level) agree.
    if (owners.size() > 1 && owners.stream().map(KubeletCgroup::podUid).distinct().count() == 1) {
      owners.removeIf(o -> !o.hasContainer());
    }
    return owners.size() == 1 ? Optional.of(owners.iterator().next()) : Optional.empty();
  }

  /**
   * The owner named by one cgroup path: the innermost pod directory and the directory right below it.
   *
   * @return the owner, or empty when the path names no pod
   */
  public static Optional<KubeletCgroup> ofPath(String path) {
    String[] segments = path.strip().split("/");
    for (int i = segments.length - 1; i >= 0; i--) {
      String uid = podUid(segments, i);
      if (uid != null) {
        String container = i + 1 < segments.length ? containerId(segments[i + 1]) : "";
        return Optional.of(new KubeletCgroup(uid, container));
      }
    }
    return Optional.empty();
  }

  private static String podUid(String[] segments, int i) {
    Matcher systemd = SYSTEMD_POD.matcher(segments[i]);
    if (systemd.matches()) {
      return systemd.group(1).replace('_', '-');
    }
    Matcher cgroupfs = CGROUPFS_POD.matcher(segments[i]);
    if (cgroupfs.matches() && i > 0 && CGROUPFS_POD_PARENTS.contains(segments[i - 1])) {
      return cgroupfs.group(1);
    }
    return null;
  }

  /** The container ID a directory below the pod's names; empty for none (conmon, anything else). */
  private static String containerId(String segment) {
    if (segment.startsWith("crio-conmon-")) {
      return "";
    }
    String id = segment;
    if (segment.endsWith(".scope")) {
      Matcher m = SYSTEMD_CONTAINER.matcher(segment);
      if (!m.matches()) {
        return "";
      }
      id = m.group(1);
    } else if (segment.startsWith("crio-")) {
      id = segment.substring("crio-".length());
    }
    return CONTAINER_ID.matcher(id).matches() ? id : "";
  }
}
