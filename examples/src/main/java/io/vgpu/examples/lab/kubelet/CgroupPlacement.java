package io.vgpu.examples.lab.kubelet;

import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where container processes get their cgroups: kubelet's cgroupfs names ({@code
 * kubepods/<qos>/pod<uid>/<container id>}) under a prefix of this lab run, in every hierarchy this
 * machine lets the lab write — cgroup v1's {@code pids} hierarchy and the v2 unified hierarchy. The
 * memory hierarchy is left alone: the lab limits nothing, it only names. On a machine that allows none,
 * containers run without a cgroup of their own.
 */
public final class CgroupPlacement {
  private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");

  private final List<Path> hierarchies;
  private final String prefix;

  private CgroupPlacement(List<Path> hierarchies, String prefix) {
    this.hierarchies = hierarchies;
    this.prefix = prefix;
  }

  /**
   * The hierarchies this machine lets the lab create cgroups in.
   *
   * @param prefix this run's prefix, e.g. {@code vgpu-lab-1a2b}: two labs never share a cgroup
   */
  public static CgroupPlacement probe(String prefix) {
    List<Path> candidates = new ArrayList<>();
    if (Files.isRegularFile(CGROUP_ROOT.resolve("cgroup.controllers"))) {
      candidates.add(CGROUP_ROOT); // pure v2
    } else {
      candidates.add(CGROUP_ROOT.resolve("pids"));
      candidates.add(CGROUP_ROOT.resolve("unified"));
    }
    List<Path> usable = new ArrayList<>();
    for (Path hierarchy : candidates) {
      Path test = hierarchy.resolve(prefix);
      try {
        Files.createDirectories(test);
        if (Files.isWritable(test.resolve("cgroup.procs"))) {
          usable.add(hierarchy);
        }
      } catch (IOException | SecurityException e) {
        // not this one
      }
    }
    return new CgroupPlacement(List.copyOf(usable), prefix);
  }

  /** Whether containers get cgroups at all. */
  public boolean available() {
    return !hierarchies.isEmpty();
  }

  /**
   * The cgroup path of a container, as kubelet's cgroupfs driver names it under this run's prefix.
   *
   * @param qosClass the pod's QoS class: Guaranteed, Burstable or BestEffort
   */
  public String containerPath(String qosClass, String podUid, String containerId) {
    String qos = switch (qosClass) {
      case "Guaranteed" -> "";
      case "Burstable" -> "burstable/";
      default -> "besteffort/";
    };
    return "/" + prefix + "/kubepods/" + qos + "pod" + podUid + "/" + containerId;
  }

  /** The {@code cgroup.procs} files a container's first process joins, creating the cgroups. */
  public List<Path> prepare(String path) throws IOException {
    List<Path> out = new ArrayList<>();
    for (Path hierarchy : hierarchies) {
      Path dir = hierarchy.resolve(path.substring(1));
      Files.createDirectories(dir);
      out.add(dir.resolve("cgroup.procs"));
    }
    return out;
  }

  /** The pids in a container's cgroups. */
  public List<Long> pids(String path) {
    List<Long> out = new ArrayList<>();
    for (Path hierarchy : hierarchies) {
      try {
        for (String line : Files.readAllLines(hierarchy.resolve(path.substring(1)).resolve("cgroup.procs"))) {
          if (!line.isBlank()) {
            out.add(Long.parseLong(line.trim()));
          }
        }
      } catch (IOException | NumberFormatException e) {
        // gone
      }
    }
    return out;
  }

  /** Removes this run's cgroups (empty ones; the lab's processes are gone by then). */
  public void removeAll() {
    for (Path hierarchy : hierarchies) {
      removeTree(hierarchy.resolve(prefix));
    }
  }

  /** Children first; a cgroup directory goes with rmdir even though it lists its interface files. */
  private static void removeTree(Path dir) {
    List<Path> children = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, Files::isDirectory)) {
      entries.forEach(children::add);
    } catch (IOException | DirectoryIteratorException e) {
      // gone, or not ours to list
    }
    children.forEach(CgroupPlacement::removeTree);
    try {
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // still in use: left behind
    }
  }
}
