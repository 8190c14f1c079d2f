package io.vgpu.bench.placement;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Writes small CSV traces for the tests. */
final class TraceFiles {
  static final String NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model";
  static final String POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time";
  static final String SHORT_POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli";

  private TraceFiles() {}

  static Path write(Path dir, String name, String... lines) {
    try {
      return Files.writeString(dir.resolve(name), String.join("\n", lines) + "\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A pod row in the full layout. */
  static String pod(String name, long cpu, long memory, int gpus, int milli, String spec) {
    return name + "," + cpu + "," + memory + "," + gpus + "," + milli + "," + spec + ",LS,Running,0,1,0";
  }
}
