package io.vgpu.nvidia;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContractSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * What a container receives for an NVIDIA grant: HAMi's environment and mounts for libvgpu.so, plus a
 * read-only limits file that libvgpu.so prefers over the environment.
 *
 * <p>Environment, in this order (device {@code i} is the {@code i}-th granted GPU, the container's
 * CUDA ordinal {@code i}):
 *
 * <ul>
 *   <li>{@code NVIDIA_VISIBLE_DEVICES}: the granted UUIDs, comma-separated;
 *   <li>{@code CUDA_DEVICE_MEMORY_LIMIT_<i>}: the granted MiB with an {@code m} suffix;
 *   <li>{@code CUDA_DEVICE_SM_LIMIT}: the first GPU's cores (HAMi), and {@code
 *       CUDA_DEVICE_SM_LIMIT_<i>} for every GPU when they differ;
 *   <li>{@code CUDA_DEVICE_MEMORY_SHARED_CACHE}: {@code <hook>/vgpu/vgpu.cache}, a fixed name inside
 *       the per-container directory (HAMi draws a random name; the directory is already unique);
 *   <li>{@code CUDA_OVERSUBSCRIBE=true} when memory is oversubscribed;
 *   <li>{@code LIBCUDA_LOG_LEVEL} when configured;
 *   <li>{@code GPU_CORE_UTILIZATION_POLICY}: {@code disable} under {@code disableCoreLimit}, else the
 *       container's own value (the admission webhook sets it from {@code gpuCorePolicy}), else {@code
 *       gpuCorePolicy} unless {@code default};
 *   <li>{@code CUDA_TASK_PRIORITY}: the container's own value (the webhook sets it from {@code
 *       nvidia.com/priority});
 *   <li>{@code CUDA_DISABLE_CONTROL=true} only in a namespace of {@link
 *       ContractSettings#disableControlNamespaces()}.
 * </ul>
 *
 * Mounts: {@code <hook>/vgpu/libvgpu.so} read-only; the per-container directory read-write at {@code
 * <hook>/vgpu}; {@code /etc/ld.so.preload} read-only, left out only in a namespace of {@link
 * ContractSettings#disableControlNamespaces()} (the container's own {@code CUDA_DISABLE_CONTROL}, which
 * HAMi obeys, is ignored: a pod must not switch its own limits off); and {@code /etc/vgpu/limits}
 * read-only. Paths: {@link HookLayout}. HAMi also mounts the node's {@code /tmp/vgpulock} read-write
 * into every container; vgpu's libvgpu.so never uses it, and a directory every tenant can write is a
 * channel between tenants, so it is not mounted.
 *
 * <p>The limits file holds every key above except {@code NVIDIA_VISIBLE_DEVICES}, as {@code KEY=VALUE}
 * lines after two comments (the pod and container; the granted UUIDs, {@link #LIMITS_FILE_DEVICES}),
 * and ends with the line {@value #LIMITS_FILE_END}, which libvgpu.so requires (a file without it
 * is cut short, and refused): the same limits as the environment, so a process whose environment was
 * edited or lost still meets them. It is one of the allocation's host files; the node agent writes it
 * (see {@link HostPreparation}). With device specs, the GPUs' device nodes and those of {@code /dev/nvidiactl},
 * {@code /dev/nvidia-uvm}, {@code /dev/nvidia-uvm-tools}, {@code /dev/nvidia-modeset} that exist under
 * the device root are passed, read-write.
 */
public final class NvidiaContainerContract implements ContainerContract {
  /** The environment variable of the visible GPUs, which the limits file does not carry. */
  public static final String VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES";

  /** The last line of every limits file: libvgpu.so refuses a file without it as incomplete. */
  public static final String LIMITS_FILE_END = "END";

  /**
   * The start of the limits file's second line, a comment libvgpu.so skips, followed by the granted
   * UUIDs in ordinal order, comma-separated: the node's own record of which cards Allocate gave the
   * container, for the node agent's watchdog, which no pod annotation can change.
   */
  public static final String LIMITS_FILE_DEVICES = "# devices: ";

  /**
   * The limits-file key that grants cards by UUID, comma-separated in ordinal order: libvgpu.so refuses
   * a visible device it does not name, and its {@code _<i>} keys refer to this list. Written in the
   * grant files of KAI fraction containers, whose visible devices come from a ConfigMap the tenant can
   * edit.
   */
  public static final String GRANTED_DEVICES = "VGPU_DEVICES";

  private static final String TASK_PRIORITY = "CUDA_TASK_PRIORITY";
  private static final String CORE_POLICY = "GPU_CORE_UTILIZATION_POLICY";
  private static final String DISABLE_CONTROL = "CUDA_DISABLE_CONTROL";
  private static final List<String> CONTROL_DEVICES = List.of("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset");
  /** The priorities libvgpu.so accepts: an optional minus and at most seven digits, within +-1000000. */
  private static final Pattern PRIORITY = Pattern.compile("-?[0-9]{1,7}");
  private static final long PRIORITY_LIMIT = 1_000_000;

  private final ContractSettings settings;
  private final HookLayout layout;

  /** A contract for one node configuration. */
  public NvidiaContainerContract(ContractSettings settings) {
    this.settings = settings;
    this.layout = new HookLayout(settings.hookPath());
  }

  /** The settings this contract was made with. */
  public ContractSettings settings() {
    return settings;
  }

  /**
   * {@inheritDoc}
   *
   * @throws IllegalArgumentException when the container's own {@code CUDA_TASK_PRIORITY} or {@code
   *     GPU_CORE_UTILIZATION_POLICY} is malformed (libvgpu.so would refuse to start), when the pod UID or
   *     container name cannot name a directory, or when device specs are passed but a GPU's device nodes
   *     are unknown; the message names the container, the variable and the value
   */
  @Override
  public Allocation allocate(PodRef pod, String podUid, ContainerGrant grant, Map<String, String> containerEnv) {
    List<DeviceGrant> devices = grant.devices();
    if (devices.isEmpty()) {
      return new Allocation(Map.of(), List.of(), List.of());
    }
    String where = "pod " + pod + " container " + grant.name();
    boolean controlDisabled = settings.controlDisabledIn(pod.namespace());
    Map<String, String> limits = limits(devices, containerEnv, where);
    if (controlDisabled) {
      limits.put(DISABLE_CONTROL, "true");
    }
    Map<String, String> env = new LinkedHashMap<>();
    env.put(VISIBLE_DEVICES, devices.stream().map(DeviceGrant::uuid).collect(Collectors.joining(",")));
    env.putAll(limits);
    String limitsFile = layout.limitsFile(podUid, grant.name());
    List<Mount> mounts = new ArrayList<>();
    mounts.add(new Mount(layout.library(), layout.library(), true));
    mounts.add(new Mount(layout.vgpuDirectory(), layout.containerDirectory(podUid, grant.name()), false));
    if (!controlDisabled) {
      mounts.add(new Mount(HookLayout.CONTAINER_PRELOAD_FILE, layout.preloadFile(), true));
    }
    mounts.add(new Mount(HookLayout.CONTAINER_LIMITS_FILE, limitsFile, true));
    return new Allocation(env, mounts, deviceNodes(devices, where), List.of(new HostFile(limitsFile, limitsFileContent(pod, grant, limits))));
  }

  /**
   * What a container holding whole cards receives, as NVIDIA's device plugin gives it (vgpu's node agent
   * under KAI Scheduler, whose reservation and whole-card pods ask for {@code nvidia.com/gpu}): {@value
   * #VISIBLE_DEVICES} naming the cards and, with device specs, their device nodes and the control
   * devices. No interposer, no limits: the cards are the container's whole.
   *
   * @param uuids the cards kubelet chose, in its order
   * @throws IllegalArgumentException when no card is given, or device specs are passed but a card's device nodes are unknown
   */
  public Allocation wholeCards(String where, List<String> uuids) {
    if (uuids.isEmpty()) {
      throw new IllegalArgumentException(where + ": no card to allocate");
    }
    List<DeviceGrant> devices = uuids.stream().map(u -> new DeviceGrant(u, "NVIDIA", 0, 0)).toList();
    return new Allocation(Map.of(VISIBLE_DEVICES, String.join(",", uuids)), List.of(), deviceNodes(devices, where));
  }

  /**
   * The limits file of a KAI fraction container ({@link HookLayout#kaiLimitsFile}): the comment lines
   * of every limits file, then {@value #GRANTED_DEVICES} naming the cards, then the keys the HAMi path
   * writes for the same grant, computed without the container's environment (the tenant wrote it), and
   * {@value #LIMITS_FILE_END}. KAI gives no compute share, so the cards carry {@code cores} 0: no
   * compute limit.
   *
   * @param devices the granted cards in ordinal order, each with its memory in MiB
   * @throws IllegalArgumentException when no card is granted or the pod UID or container cannot name a directory
   */
  public String kaiLimitsFile(PodRef pod, String podUid, String container, List<DeviceGrant> devices) {
    if (devices.isEmpty()) {
      throw new IllegalArgumentException("pod " + pod + " container " + container + ": a KAI grant names at least one card");
    }
    layout.kaiLimitsFile(podUid, container); // validates the names
    Map<String, String> limits = new LinkedHashMap<>();
    limits.put(GRANTED_DEVICES, devices.stream().map(DeviceGrant::uuid).collect(Collectors.joining(",")));
    limits.putAll(limits(devices, Map.of(), "pod " + pod + " container " + container));
    return limitsFileContent(pod, new ContainerGrant(container, devices), limits);
  }

  /** The keys libvgpu.so reads, in the environment's order: everything but the visible devices. */
  private Map<String, String> limits(List<DeviceGrant> devices, Map<String, String> containerEnv, String where) {
    Map<String, String> out = new LinkedHashMap<>();
    for (int i = 0; i < devices.size(); i++) {
      out.put("CUDA_DEVICE_MEMORY_LIMIT_" + i, devices.get(i).memoryMiB() + "m");
    }
    int firstCores = devices.get(0).cores();
    out.put("CUDA_DEVICE_SM_LIMIT", Integer.toString(firstCores));
    if (devices.stream().anyMatch(d -> d.cores() != firstCores)) {
      for (int i = 0; i < devices.size(); i++) {
        out.put("CUDA_DEVICE_SM_LIMIT_" + i, Integer.toString(devices.get(i).cores()));
      }
    }
    out.put("CUDA_DEVICE_MEMORY_SHARED_CACHE", layout.containerRegion());
    if (settings.memoryOversubscribed()) {
      out.put("CUDA_OVERSUBSCRIBE", "true");
    }
    if (!settings.libCudaLogLevel().isEmpty()) {
      out.put("LIBCUDA_LOG_LEVEL", settings.libCudaLogLevel());
    }
    String policy = corePolicy(containerEnv, where);
    if (!policy.isEmpty()) {
      out.put(CORE_POLICY, policy);
    }
    String priority = containerEnv.get(TASK_PRIORITY);
    if (priority != null) {
      out.put(TASK_PRIORITY, requirePriority(priority, where));
    }
    return out;
  }

  private String corePolicy(Map<String, String> containerEnv, String where) {
    if (settings.disableCoreLimit()) {
      return "disable";
    }
    String own = containerEnv.get(CORE_POLICY);
    if (own != null) {
      if (!ContractSettings.CORE_POLICIES.contains(own.toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException(where + ": env " + CORE_POLICY + "='" + own + "' is not one of default, force, disable");
      }
      return own;
    }
    return settings.gpuCorePolicy().equals("default") ? "" : settings.gpuCorePolicy();
  }

  private static String requirePriority(String value, String where) {
    if (!PRIORITY.matcher(value).matches() || Math.abs(Long.parseLong(value)) > PRIORITY_LIMIT) {
      throw new IllegalArgumentException(where + ": env " + TASK_PRIORITY + "='" + value + "' is not an integer between -1000000 and 1000000");
    }
    return value;
  }

  private List<DeviceNode> deviceNodes(List<DeviceGrant> devices, String where) {
    if (!settings.passDeviceSpecs()) {
      return List.of();
    }
    List<String> paths = new ArrayList<>();
    for (DeviceGrant d : devices) {
      List<String> nodes = settings.deviceNodes().get(d.uuid());
      if (nodes == null) {
        throw new IllegalArgumentException(where + ": no device node is known for " + d.uuid() + " (ContractSettings.deviceNodes)");
      }
      nodes.stream().filter(n -> !paths.contains(n)).forEach(paths::add);
    }
    Path root = Path.of(settings.devRoot());
    for (String control : CONTROL_DEVICES) {
      if (Files.exists(onHost(root, control))) {
        paths.add(control);
      }
    }
    List<DeviceNode> out = new ArrayList<>();
    for (String path : paths) {
      out.add(new DeviceNode(path, onHost(root, path).toString(), "rw"));
    }
    return out;
  }

  private static Path onHost(Path root, String containerPath) {
    return root.resolve(containerPath.substring(1));
  }

  private static String limitsFileContent(PodRef pod, ContainerGrant grant, Map<String, String> limits) {
    StringBuilder out = new StringBuilder();
    String subject = "pod " + pod + " container " + grant.name();
    // a comment must stay one line: libvgpu.so reads the next line as a key
    out.append("# vgpu limits of ").append(subject.replaceAll("\\p{Cntrl}", "?")).append('\n');
    String cards = grant.devices().stream().map(DeviceGrant::uuid).collect(Collectors.joining(","));
    out.append(LIMITS_FILE_DEVICES).append(cards.replaceAll("\\p{Cntrl}", "?")).append('\n');
    limits.forEach((key, value) -> out.append(key).append('=').append(value).append('\n'));
    return out.append(LIMITS_FILE_END).append('\n').toString();
  }
}
