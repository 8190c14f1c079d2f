package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * How a pod's container becomes a process on one lab node: the image {@code vgpu-lab/probe} runs the
 * probe with the container's args as its ops; an image a stand-in registered ({@link ImageProgram})
 * runs its program; any other image runs a process that only holds what it was granted. The environment is the container's own as kubelet resolved it ({@link
 * ContainerEnvironment}), then what the device plugin allocated; the node's default runtime is NVIDIA's, which gives
 * the node's driver libraries and the GPUs {@code NVIDIA_VISIBLE_DEVICES} names to any container that
 * sets it ({@link NvidiaRuntime}, which also says whose value counts when both set it), unless the
 * pod's RuntimeClass names the plain runtime.
 */
public final class LabPodRunner implements KubeletStandIn.PodRunner {
  /** The image that runs the probe. */
  public static final String PROBE_IMAGE = "vgpu-lab/probe";
  private static final String MOCK_VISIBLE = "VGPU_MOCK_VISIBLE_DEVICES";

  private final String node;
  private final ContainerRuntime runtime;
  private final MockMachine machine;
  private final Supplier<Path> probe;
  private final Map<String, String> driverLibraries;
  private final Map<String, ImageProgram> images;

  /**
   * What a container of an image runs in the lab, which has no images: the program that plays it.
   * The lab's stand-ins register theirs (KAI's resource-reservation image, for one).
   */
  @FunctionalInterface
  public interface ImageProgram {
    /**
     * The container's command line.
     *
     * @param container the container's spec
     * @param env the container's environment as kubelet resolved it (for {@code $(VAR)} in args)
     */
    List<String> command(Container container, Map<String, String> env);
  }

  /**
   * A runner for one node.
   *
   * @param probe finds the probe program (when a container runs it)
   * @param driverLibraries the mock driver's libraries by the file name a container loads
   */
  public LabPodRunner(String node, ContainerRuntime runtime, MockMachine machine, Supplier<Path> probe, Map<String, String> driverLibraries) {
    this(node, runtime, machine, probe, driverLibraries, Map.of());
  }

  /**
   * A runner for one node that plays more images than the probe.
   *
   * @param images the program of each image, by image name (any tag or digest of it matches)
   */
  public LabPodRunner(String node, ContainerRuntime runtime, MockMachine machine, Supplier<Path> probe, Map<String, String> driverLibraries,
      Map<String, ImageProgram> images) {
    this.node = node;
    this.runtime = runtime;
    this.machine = machine;
    this.probe = probe;
    this.driverLibraries = Map.copyOf(driverLibraries);
    this.images = Map.copyOf(images);
  }

  /** The node this runner starts containers on. */
  public String node() {
    return node;
  }

  @Override
  public RunningContainer start(Pod pod, String containerName, KubeletStandIn.Launch launch) throws IOException {
    Container container = container(pod, containerName);
    // what the image and the runtime set, under the container's own variables
    Map<String, String> own = new LinkedHashMap<>();
    own.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    own.put("HOME", "/tmp");
    own.put("HOSTNAME", pod.getMetadata().getName());
    own.putAll(launch.env());
    Map<String, String> allocatedEnv = launch.allocatedEnv();
    Map<String, String> env = NvidiaRuntime.processEnvironment(own, allocatedEnv);
    Optional<ContainerSpec.DriverView> driver = Optional.empty();
    Optional<String> visible = launch.runtime() == RuntimeHandler.NVIDIA ? NvidiaRuntime.exposed(own, allocatedEnv, machine.devices()) : Optional.empty();
    if (visible.isPresent()) {
      Map<String, String> driverEnv = new LinkedHashMap<>(machine.environment());
      driverEnv.put(MOCK_VISIBLE, visible.get());
      env.putAll(driverEnv);
      driver = Optional.of(new ContainerSpec.DriverView(driverLibraries, driverEnv));
    }
    List<String> command = new ArrayList<>();
    Optional<ImageProgram> program = images.entrySet().stream().filter(e -> isImage(container.getImage(), e.getKey())).map(Map.Entry::getValue).findFirst();
    if (program.isPresent()) {
      command.addAll(program.get().command(container, launch.env()));
    } else if (isProbe(container.getImage())) {
      command.add(probe.get().toString());
      // kubelet expands $(VAR) in args from the container's environment
      Optional.ofNullable(container.getArgs()).orElse(List.of()).forEach(a -> command.add(EnvExpansion.expand(a, launch.env())));
    } else {
      command.add("sleep");
      command.add("infinity");
    }
    String qos = QosClass.of(pod);
    return runtime.start(new ContainerSpec(
        pod.getMetadata().getNamespace(), pod.getMetadata().getName(), pod.getMetadata().getUid(), qos, containerName, command, env, launch.mounts(), driver));
  }

  /** Whether an image reference names the probe (any tag or digest). */
  public static boolean isProbe(String image) {
    return isImage(image, PROBE_IMAGE);
  }

  /** Whether an image reference names {@code name} (any tag or digest). */
  public static boolean isImage(String image, String name) {
    return image != null && (image.equals(name) || image.startsWith(name + ":") || image.startsWith(name + "@"));
  }

  private static Container container(Pod pod, String name) {
    List<Container> all = new ArrayList<>(pod.getSpec().getContainers());
    Optional.ofNullable(pod.getSpec().getInitContainers()).ifPresent(all::addAll);
    return all.stream().filter(c -> c.getName().equals(name)).findFirst()
        .orElseThrow(() -> new IllegalStateException("pod has no container " + name));
  }
}
