package io.vgpu.examples.lab;

import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What a test that runs the lab needs from the machine; without it the test is skipped, saying why. */
final class LabAssumptions {
  private LabAssumptions() {}

  static LabHome labHome() throws IOException {
    assumeThat(Files.readString(Path.of("/proc/self/status"))).as("the lab needs root (mount namespaces, cgroups)").containsPattern("Uid:\\s+0\\s");
    LabHome home = LabHome.locate();
    for (String file : new String[] {"libcuda.so.1", "libnvidia-ml.so.1", "vgpu-lab-probe"}) {
      assumeThat(home.nativeDirectory().resolve(file)).as("the lab needs vgpu-native's " + file + " (gcc and make)").isRegularFile();
    }
    return home;
  }
}
