package io.vgpu.k8s.watchdog;

import io.vgpu.nvidia.NvidiaDeviceSource;
import io.vgpu.nvidia.NvmlDevice;
import io.vgpu.nvidia.NvmlException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What the driver says every process holds on every GPU of the node: accounting no container can edit. */
@FunctionalInterface
public interface GpuProcesses {
  /** One sample: every compute process on every GPU that answered, and the GPUs that did not. */
  Sample sample();

  /**
   * One sample.
   *
   * @param processes every compute process on every GPU whose processes could be listed
   * @param unlisted the GPUs whose processes could not be listed, by UUID, with NVML's error
   */
  record Sample(List<GpuProcess> processes, Map<String, String> unlisted) {
    /** Copies the collections. */
    public Sample {
      processes = List.copyOf(processes);
      unlisted = Map.copyOf(unlisted);
    }

    /** A sample in which every GPU answered. */
    public static Sample of(List<GpuProcess> processes) {
      return new Sample(processes, Map.of());
    }
  }

  /**
   * One process on one GPU.
   *
   * @param deviceUuid the GPU's UUID
   * @param pid the process ID in the host's PID namespace
   * @param usedBytes device memory the driver charges to the process on that GPU
   */
  record GpuProcess(String deviceUuid, int pid, long usedBytes) {}

  /**
   * NVML's {@code nvmlDeviceGetComputeRunningProcesses} on every GPU. A GPU that fails the query (fell off
   * the bus) is named among the sample's unlisted GPUs. Processes on MIG instances are left out: MIG
   * partitions memory in hardware, and their grants name MIG devices, not the GPU.
   */
  static GpuProcesses nvml(NvidiaDeviceSource source) {
    Map<String, NvmlDevice> devices = new LinkedHashMap<>();
    for (NvmlDevice device : source.nvml().devices()) {
      devices.put(device.uuid(), device); // a GPU off the bus still answers identity queries
    }
    return () -> {
      List<GpuProcess> out = new ArrayList<>();
      Map<String, String> unlisted = new LinkedHashMap<>();
      devices.forEach((uuid, device) -> {
        try {
          for (NvmlDevice.ProcessInfo p : device.computeProcesses()) {
            if (p.gpuInstanceId() == NO_MIG_INSTANCE) {
              out.add(new GpuProcess(uuid, p.pid(), p.usedGpuMemory()));
            }
          }
        } catch (NvmlException e) {
          unlisted.put(uuid, String.valueOf(e.getMessage()));
        }
      });
      return new Sample(out, unlisted);
    };
  }

  /** NVML's instance ID of a process that runs on no MIG instance. */
  int NO_MIG_INSTANCE = 0xFFFFFFFF;
}
