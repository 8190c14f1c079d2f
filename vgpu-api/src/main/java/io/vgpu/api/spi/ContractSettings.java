package io.vgpu.api.spi;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What a {@link ContainerContract} needs to know besides a container's grant: where the interposer
 * lives on the node and the node-wide switches of HAMi's device configuration that change what a
 * container receives. One value serves every container of a node; the node agent builds it from the
 * device configuration (and its own flags), {@code vgpu simulate} from the scenario's configuration.
 *
 * @param hookPath HAMi's {@code HOOK_PATH}: the interposer and the per-container directories live
 *     under {@code <hookPath>/vgpu} on the node, and the interposer appears at the same path inside
 *     containers; an absolute path without a trailing slash (default {@value #DEFAULT_HOOK_PATH})
 * @param libCudaLogLevel the interposer's {@code LIBCUDA_LOG_LEVEL}, a digit 0-9, or empty to leave it
 *     unset (device config {@code libCudaLogLevel})
 * @param gpuCorePolicy {@code default}, {@code force} or {@code disable} (device config {@code
 *     gpuCorePolicy})
 * @param disableCoreLimit whether compute limits are switched off for every container (device config
 *     {@code disableCoreLimit}); wins over {@code gpuCorePolicy}
 * @param memoryOversubscribed whether the node offers more memory than its GPUs have ({@code
 *     deviceMemoryScaling > 1}), so that a grant may exceed a device's physical memory
 * @param passDeviceSpecs whether containers receive their GPUs' device nodes (HAMi's {@code
 *     --pass-device-specs}) instead of leaving that to the container runtime
 * @param devRoot where the device nodes live on the host (HAMi's {@code --dev-root}), e.g. {@code /}
 *     or {@code /run/nvidia/driver}; used with {@code passDeviceSpecs}
 * @param deviceNodes per device UUID, the device nodes a container granted that device receives, as
 *     paths inside the container (e.g. {@code /dev/nvidia3}); the node agent fills it from its device
 *     source; used with {@code passDeviceSpecs}
 * @param disableControlNamespaces the namespaces whose containers run without enforcement (device config
 *     {@code disableControlNamespaces}); the only way to switch the interposer off, since a pod's own
 *     {@code CUDA_DISABLE_CONTROL} is not trusted
 */
public record ContractSettings(
    String hookPath,
    String libCudaLogLevel,
    String gpuCorePolicy,
    boolean disableCoreLimit,
    boolean memoryOversubscribed,
    boolean passDeviceSpecs,
    String devRoot,
    Map<String, List<String>> deviceNodes,
    Set<String> disableControlNamespaces) {

  /** HAMi's default {@code HOOK_PATH}. */
  public static final String DEFAULT_HOOK_PATH = "/usr/local";

  /** The compute policies the interposer knows. */
  public static final Set<String> CORE_POLICIES = Set.of("default", "force", "disable");

  /**
   * HAMi's defaults: hook path {@value #DEFAULT_HOOK_PATH}, log level 1 (the Helm chart's), policy
   * {@code default}, no oversubscription, no device specs; enforcement in every namespace.
   */
  public static final ContractSettings DEFAULT =
      new ContractSettings(DEFAULT_HOOK_PATH, "1", "default", false, false, false, "/", Map.of(), Set.of());

  /** Validates the fields and copies the device nodes, sorted by UUID, and the namespaces, sorted. */
  public ContractSettings {
    Objects.requireNonNull(hookPath, "hookPath");
    Objects.requireNonNull(libCudaLogLevel, "libCudaLogLevel");
    Objects.requireNonNull(gpuCorePolicy, "gpuCorePolicy");
    Objects.requireNonNull(devRoot, "devRoot");
    Objects.requireNonNull(deviceNodes, "deviceNodes");
    if (!hookPath.startsWith("/") || (hookPath.length() > 1 && hookPath.endsWith("/"))) {
      throw new IllegalArgumentException(
          "hook path '" + hookPath + "' must be an absolute path without a trailing slash");
    }
    requireLogLevel(libCudaLogLevel);
    if (!CORE_POLICIES.contains(gpuCorePolicy)) {
      throw new IllegalArgumentException(
          "gpuCorePolicy '" + gpuCorePolicy + "' is not one of default, force, disable");
    }
    if (!devRoot.startsWith("/")) {
      throw new IllegalArgumentException("devRoot '" + devRoot + "' must be an absolute path");
    }
    Map<String, List<String>> nodes = new TreeMap<>();
    deviceNodes.forEach((uuid, paths) -> nodes.put(uuid, List.copyOf(paths)));
    deviceNodes = Collections.unmodifiableMap(nodes);
    Objects.requireNonNull(disableControlNamespaces, "disableControlNamespaces");
    disableControlNamespaces = Collections.unmodifiableSet(new TreeSet<>(disableControlNamespaces));
  }

  /**
   * Checks a {@code LIBCUDA_LOG_LEVEL} value the way the interposer reads it.
   *
   * @throws IllegalArgumentException naming the value unless it is empty or a digit 0-9
   */
  public static void requireLogLevel(String value) {
    if (!value.isEmpty() && !(value.length() == 1 && value.charAt(0) >= '0' && value.charAt(0) <= '9')) {
      throw new IllegalArgumentException("libCudaLogLevel '" + value + "' must be a digit 0-9 or empty");
    }
  }

  /** Returns a copy with another hook path. */
  public ContractSettings withHookPath(String value) {
    return new ContractSettings(value, libCudaLogLevel, gpuCorePolicy, disableCoreLimit, memoryOversubscribed, passDeviceSpecs, devRoot, deviceNodes, disableControlNamespaces);
  }

  /** Returns a copy with another log level. */
  public ContractSettings withLibCudaLogLevel(String value) {
    return new ContractSettings(hookPath, value, gpuCorePolicy, disableCoreLimit, memoryOversubscribed, passDeviceSpecs, devRoot, deviceNodes, disableControlNamespaces);
  }

  /** Returns a copy with another compute policy. */
  public ContractSettings withGpuCorePolicy(String value) {
    return new ContractSettings(hookPath, libCudaLogLevel, value, disableCoreLimit, memoryOversubscribed, passDeviceSpecs, devRoot, deviceNodes, disableControlNamespaces);
  }

  /** Returns a copy with compute limits switched off, or not, for every container. */
  public ContractSettings withDisableCoreLimit(boolean value) {
    return new ContractSettings(hookPath, libCudaLogLevel, gpuCorePolicy, value, memoryOversubscribed, passDeviceSpecs, devRoot, deviceNodes, disableControlNamespaces);
  }

  /** Returns a copy that says whether memory is oversubscribed. */
  public ContractSettings withMemoryOversubscribed(boolean value) {
    return new ContractSettings(hookPath, libCudaLogLevel, gpuCorePolicy, disableCoreLimit, value, passDeviceSpecs, devRoot, deviceNodes, disableControlNamespaces);
  }

  /** Returns a copy that passes device nodes found under {@code root}: {@code nodes} per device UUID. */
  public ContractSettings withDeviceSpecs(String root, Map<String, List<String>> nodes) {
    return new ContractSettings(hookPath, libCudaLogLevel, gpuCorePolicy, disableCoreLimit, memoryOversubscribed, true, root, nodes, disableControlNamespaces);
  }

  /** Returns a copy whose containers in {@code namespaces} run without enforcement. */
  public ContractSettings withDisableControlNamespaces(Set<String> namespaces) {
    return new ContractSettings(hookPath, libCudaLogLevel, gpuCorePolicy, disableCoreLimit, memoryOversubscribed, passDeviceSpecs, devRoot, deviceNodes, namespaces);
  }

  /** Whether containers of {@code namespace} run without enforcement. */
  public boolean controlDisabledIn(String namespace) {
    return disableControlNamespaces.contains(namespace);
  }
}
