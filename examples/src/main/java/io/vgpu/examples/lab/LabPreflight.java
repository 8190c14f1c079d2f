package io.vgpu.examples.lab;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What the machine must offer before a lab starts: root (namespaces, mounts, cgroups), the tools, vgpu-native's build. */
final class LabPreflight {
  private LabPreflight() {}

  static void check(LabHome home) {
    if (!isRoot()) {
      throw new UnavailableException("vgpu lab runs containers in their own mount namespaces and cgroups: run it as root");
    }
    for (String tool : List.of("unshare", "setpriv", "mount", "sleep")) {
      if (!onPath(tool)) {
        throw new UnavailableException("vgpu lab needs '" + tool + "' (util-linux, coreutils) on PATH");
      }
    }
    // the probe is looked for when a container runs it
    for (String file : List.of("libcuda.so.1", "libnvidia-ml.so.1")) {
      home.nativeFile(file);
    }
  }

  private static boolean isRoot() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("Uid:")) {
          return line.split("\\s+")[2].equals("0");
        }
      }
    } catch (IOException e) {
      // not Linux
    }
    return false;
  }

  private static boolean onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
      if (Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return Files.isExecutable(Path.of("/usr/bin", tool)) || Files.isExecutable(Path.of("/usr/sbin", tool));
  }
}
