package io.vgpu.api.spi;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.PodRef;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a container receives for its grant so that the limits are real inside it: environment,
 * mounts and device nodes. The NVIDIA contract arms the interposer library.
 */
public interface ContainerContract {

  /**
   * Builds what the container receives.
   *
   * @param pod the pod
   * @param podUid the pod's UID (names the per-container directory on the host)
   * @param grant the container's grant, devices in the container's order
   * @param containerEnv the environment the container's manifest sets (some keys change the contract,
   *     e.g. {@code CUDA_DISABLE_CONTROL})
   * @return the container's allocation
   */
  Allocation allocate(PodRef pod, String podUid, ContainerGrant grant, Map<String, String> containerEnv);

  /**
   * What a container receives.
   *
   * @param env environment variables, in a stable order
   * @param mounts bind mounts
   * @param devices device nodes
   */
  record Allocation(Map<String, String> env, List<Mount> mounts, List<DeviceNode> devices) {
    /** Copies the collections. */
    public Allocation {
      env = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(env));
      mounts = List.copyOf(mounts);
      devices = List.copyOf(devices);
    }
  }

  /**
   * A bind mount from the host into the container.
   *
   * @param containerPath where it appears in the container
   * @param hostPath what is mounted
   * @param readOnly whether the container may not write it
   */
  record Mount(String containerPath, String hostPath, boolean readOnly) {
    /** Validates the fields. */
    public Mount {
      Objects.requireNonNull(containerPath, "containerPath");
      Objects.requireNonNull(hostPath, "hostPath");
    }
  }

  /**
   * A device node passed into the container.
   *
   * @param containerPath where it appears in the container
   * @param hostPath the node on the host
   * @param permissions cgroup permissions, e.g. {@code rw}
   */
  record DeviceNode(String containerPath, String hostPath, String permissions) {
    /** Validates the fields. */
    public DeviceNode {
      Objects.requireNonNull(containerPath, "containerPath");
      Objects.requireNonNull(hostPath, "hostPath");
      Objects.requireNonNull(permissions, "permissions");
    }
  }
}
