package io.vgpu.api.spi;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.PodRef;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a container receives for its grant so that the limits are real inside it: environment,
 * mounts, device nodes, and the files the node agent writes on the host before the container starts.
 * The NVIDIA contract arms the interposer library. Contracts come from a {@link
 * ContainerContractProvider}; they are immutable and thread-safe, and {@link #allocate} does no I/O
 * beyond reading the host's device nodes when device specs are passed.
 */
public interface ContainerContract {

  /**
   * Builds what the container receives.
   *
   * @param pod the pod
   * @param podUid the pod's UID (names the per-container directory on the host)
   * @param grant the container's grant, devices in the container's order
   * @param containerEnv the environment the container's manifest sets (some keys change the contract,
   *     e.g. {@code CUDA_TASK_PRIORITY}; never whether limits are enforced)
   * @return the container's allocation
   */
  Allocation allocate(PodRef pod, String podUid, ContainerGrant grant, Map<String, String> containerEnv);

  /**
   * What a container receives.
   *
   * @param env environment variables, in a stable order
   * @param mounts bind mounts
   * @param devices device nodes
   * @param hostFiles files the node agent must write on the host, before the container starts, for
   *     the mounts to show them (e.g. the container's limits file); the directories that hold them
   *     are never mounted writable into any container
   */
  record Allocation(Map<String, String> env, List<Mount> mounts, List<DeviceNode> devices, List<HostFile> hostFiles) {
    /** Copies the collections. */
    public Allocation {
      env = Collections.unmodifiableMap(new LinkedHashMap<>(env));
      mounts = List.copyOf(mounts);
      devices = List.copyOf(devices);
      hostFiles = List.copyOf(hostFiles);
    }

    /** An allocation that needs no file on the host. */
    public Allocation(Map<String, String> env, List<Mount> mounts, List<DeviceNode> devices) {
      this(env, mounts, devices, List.of());
    }
  }

  /**
   * A file the node agent writes on the host for one container.
   *
   * @param hostPath the absolute path on the host
   * @param content the file's text (UTF-8)
   */
  record HostFile(String hostPath, String content) {
    /** Validates the fields. */
    public HostFile {
      Objects.requireNonNull(hostPath, "hostPath");
      Objects.requireNonNull(content, "content");
      if (!hostPath.startsWith("/")) {
        throw new IllegalArgumentException("host file path '" + hostPath + "' is not absolute");
      }
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
