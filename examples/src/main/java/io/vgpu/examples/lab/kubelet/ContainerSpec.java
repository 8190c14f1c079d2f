package io.vgpu.examples.lab.kubelet;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Everything the lab's container runtime needs to start one container process.
 *
 * @param podNamespace the pod's namespace
 * @param podName the pod's name
 * @param podUid the pod's UID
 * @param qosClass the pod's QoS class (names its cgroup)
 * @param container the container's name
 * @param command the process's command line
 * @param env the process's whole environment
 * @param mounts bind mounts, in the order they are applied
 * @param driver the node's mock driver, when the NVIDIA runtime exposes GPUs to this container
 */
public record ContainerSpec(
    String podNamespace,
    String podName,
    String podUid,
    String qosClass,
    String container,
    List<String> command,
    Map<String, String> env,
    List<Mount> mounts,
    Optional<DriverView> driver) {

  /**
   * A bind mount.
   *
   * @param containerPath where the container sees it
   * @param hostPath what is mounted
   * @param readOnly whether it is mounted read-only
   */
  public record Mount(String containerPath, String hostPath, boolean readOnly) {}

  /**
   * The NVIDIA runtime's view of the node's driver in this container: the driver's libraries where the
   * container's loader finds them, and the visible GPUs.
   *
   * @param libraries the driver libraries to expose (host files), by the name they carry in the container
   * @param environment the driver's configuration (the mock machine, and the visible GPUs)
   */
  public record DriverView(Map<String, String> libraries, Map<String, String> environment) {}

  /** Copies the collections. */
  public ContainerSpec {
    command = List.copyOf(command);
    env = Map.copyOf(env);
    mounts = List.copyOf(mounts);
  }
}
