package io.vgpu.bench.placement;

import java.util.List;

/**
 * One pod of a trace's pod list, normalized as the paper's simulator reads it: a pod without GPUs or
 * without a GPU share is CPU-only, and a share above a whole GPU is a whole GPU.
 *
 * @param name the pod's name
 * @param cpuMilli CPU request in millicores
 * @param memoryMiB memory request in MiB
 * @param gpus number of GPUs (0 for a CPU-only pod)
 * @param gpuMilli share of each GPU in milli-GPU, 1..1000 (0 for a CPU-only pod)
 * @param gpuSpec GPU models the pod may use; empty means any
 */
public record TracePod(String name, long cpuMilli, long memoryMiB, int gpus, int gpuMilli, List<String> gpuSpec) {

  /** One whole GPU, in milli-GPU. */
  public static final int WHOLE_GPU = 1000;

  /** Normalizes the GPU fields and copies the spec. */
  public TracePod {
    if (gpus <= 0 || gpuMilli <= 0) {
      gpus = 0;
      gpuMilli = 0;
    }
    gpuMilli = Math.min(gpuMilli, WHOLE_GPU);
    gpuSpec = List.copyOf(gpuSpec);
  }

  /** The pod's whole GPU request, in milli-GPU. */
  public long totalGpuMilli() {
    return (long) gpus * gpuMilli;
  }

  /** Whether a node of this GPU model satisfies the pod's spec (case-insensitive, whole names). */
  public boolean acceptsModel(String model) {
    if (gpuSpec.isEmpty()) {
      return true;
    }
    for (String accepted : gpuSpec) {
      if (accepted.equalsIgnoreCase(model)) {
        return true;
      }
    }
    return false;
  }
}
