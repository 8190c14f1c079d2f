package io.vgpu.k8s.config;

import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SharingConfig;
import io.vgpu.api.spi.ContractSettings;
import io.vgpu.core.EngineConfig;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * HAMi's NVIDIA device configuration (the {@code nvidia} section of {@code device-config.yaml}) plus the
 * scheduler's default policies and the node agent's memory watchdog: one record shared by {@code vgpu
 * simulate}, the scheduler and the device plugin. Keys and defaults are HAMi's, except {@code watchdog}
 * and {@code disableControlNamespaces}.
 *
 * @param resourceCountName the count resource ({@code nvidia.com/gpu})
 * @param resourceMemoryName the memory resource ({@code nvidia.com/gpumem})
 * @param resourceMemoryPercentageName the memory-percentage resource ({@code nvidia.com/gpumem-percentage})
 * @param resourceCoreName the compute resource ({@code nvidia.com/gpucores})
 * @param resourcePriorityName the priority resource ({@code nvidia.com/priority})
 * @param overwriteEnv whether admission gives containers without GPUs {@code NVIDIA_VISIBLE_DEVICES=none}
 * @param defaultMemory MiB per card when a container asks for neither MiB nor a percentage; 0 = whole card
 * @param defaultCores compute share when a container asks for none
 * @param defaultGPUNum card count admission adds when a container asks for memory or cores only
 * @param memoryFactor multiplier for requested memory and memory quotas
 * @param disableCoreLimit whether containers get {@code GPU_CORE_UTILIZATION_POLICY=disable}
 * @param gpuCorePolicy {@code default}, {@code force} or {@code disable}; other than default, admission
 *     sets {@code GPU_CORE_UTILIZATION_POLICY}
 * @param runtimeClassName runtime class admission sets on GPU pods that have none; empty for none
 * @param migProfileAllowlist the MIG profiles allowed per model
 * @param deviceSplitCount how many containers may share a card
 * @param deviceMemoryScaling factor on each card's memory as registered
 * @param deviceCoreScaling factor on each card's 100 compute units as registered
 * @param preConfiguredDeviceMemory MiB to assume for cards reporting none; 0 skips them
 * @param libCudaLogLevel the interposer's {@code LIBCUDA_LOG_LEVEL}
 * @param enableNumaTopology whether the device plugin advertises NUMA topology
 * @param nodeSchedulerPolicy the default node policy ({@code binpack} or {@code spread})
 * @param gpuSchedulerPolicy the default device policy ({@code spread}, {@code binpack}, a chain, or a
 *     registered placement policy such as {@code fgd})
 * @param watchdog the node agent's memory watchdog (vgpu's own key, not HAMi's)
 * @param disableControlNamespaces namespaces whose GPU containers run without enforcement (vgpu's own
 *     key, not HAMi's): the node agent leaves their interposer out; no other setting, and nothing a pod
 *     sets, switches enforcement off (HAMi obeys a pod's {@code CUDA_DISABLE_CONTROL}; vgpu does not)
 * @param webhookIgnoreLabelNamespaces namespaces whose pods may skip the admission webhook's checks
 *     with the label {@code hami.io/webhook=ignore} (vgpu's key; HAMi honours the label everywhere).
 *     Anywhere else the label is a pod's own word and changes nothing. Empty by default.
 */
public record DeviceConfig(
    String resourceCountName,
    String resourceMemoryName,
    String resourceMemoryPercentageName,
    String resourceCoreName,
    String resourcePriorityName,
    boolean overwriteEnv,
    int defaultMemory,
    int defaultCores,
    int defaultGPUNum,
    int memoryFactor,
    boolean disableCoreLimit,
    String gpuCorePolicy,
    String runtimeClassName,
    List<MigProfileAllowance> migProfileAllowlist,
    int deviceSplitCount,
    double deviceMemoryScaling,
    double deviceCoreScaling,
    long preConfiguredDeviceMemory,
    String libCudaLogLevel,
    boolean enableNumaTopology,
    String nodeSchedulerPolicy,
    String gpuSchedulerPolicy,
    WatchdogConfig watchdog,
    Set<String> disableControlNamespaces,
    List<String> webhookIgnoreLabelNamespaces) {

  /** HAMi's defaults (Helm chart values). */
  public static final DeviceConfig DEFAULT = builder().build();

  /** Validates the fields. */
  public DeviceConfig {
    Objects.requireNonNull(resourceCountName, "resourceCountName");
    Objects.requireNonNull(resourceMemoryName, "resourceMemoryName");
    Objects.requireNonNull(resourceMemoryPercentageName, "resourceMemoryPercentageName");
    Objects.requireNonNull(resourceCoreName, "resourceCoreName");
    Objects.requireNonNull(resourcePriorityName, "resourcePriorityName");
    Objects.requireNonNull(gpuCorePolicy, "gpuCorePolicy");
    Objects.requireNonNull(runtimeClassName, "runtimeClassName");
    migProfileAllowlist = List.copyOf(migProfileAllowlist);
    Objects.requireNonNull(libCudaLogLevel, "libCudaLogLevel");
    Objects.requireNonNull(nodeSchedulerPolicy, "nodeSchedulerPolicy");
    Objects.requireNonNull(gpuSchedulerPolicy, "gpuSchedulerPolicy");
    Objects.requireNonNull(watchdog, "watchdog");
    disableControlNamespaces = Collections.unmodifiableSet(new TreeSet<>(Objects.requireNonNull(disableControlNamespaces, "disableControlNamespaces")));
    webhookIgnoreLabelNamespaces = List.copyOf(webhookIgnoreLabelNamespaces);
    sharingOf(deviceSplitCount, deviceMemoryScaling, deviceCoreScaling, preConfiguredDeviceMemory);
  }

  /** A builder starting from HAMi's defaults. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this configuration. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /** The resource names and request defaults the engine and admission use. */
  public ResourceSchema schema() {
    return ResourceSchema.nvidia()
        .withResourceNames(resourceCountName, resourceMemoryName, resourceMemoryPercentageName, resourceCoreName, resourcePriorityName)
        .withMemoryFactor(memoryFactor)
        .withDefaults(defaultMemory, defaultCores, defaultGPUNum);
  }

  /** How each node shares its cards. */
  public SharingConfig sharing() {
    return sharingOf(deviceSplitCount, deviceMemoryScaling, deviceCoreScaling, preConfiguredDeviceMemory);
  }

  /**
   * What the container contract takes from this configuration ({@code libCudaLogLevel}, {@code
   * gpuCorePolicy}, {@code disableCoreLimit}, {@code disableControlNamespaces}, and oversubscription when
   * {@code deviceMemoryScaling > 1}), over HAMi's node defaults; the node agent adds its own hook path and
   * device specs.
   *
   * @throws IllegalArgumentException when {@code libCudaLogLevel} is not a digit 0-9 or empty
   */
  public ContractSettings contractSettings() {
    return ContractSettings.DEFAULT
        .withLibCudaLogLevel(libCudaLogLevel)
        .withGpuCorePolicy(gpuCorePolicy)
        .withDisableCoreLimit(disableCoreLimit)
        .withMemoryOversubscribed(deviceMemoryScaling > 1)
        .withDisableControlNamespaces(disableControlNamespaces);
  }

  /** The engine configuration: schema and default policies. */
  public EngineConfig engineConfig() {
    return new EngineConfig(schema(), nodeSchedulerPolicy, gpuSchedulerPolicy);
  }

  private static SharingConfig sharingOf(int split, double memoryScaling, double coreScaling, long preConfigured) {
    return new SharingConfig(split, memoryScaling, coreScaling, preConfigured);
  }

  /** Builds a {@link DeviceConfig}; every setter is named after its key. */
  public static final class Builder {
    private String resourceCountName = "nvidia.com/gpu";
    private String resourceMemoryName = "nvidia.com/gpumem";
    private String resourceMemoryPercentageName = "nvidia.com/gpumem-percentage";
    private String resourceCoreName = "nvidia.com/gpucores";
    private String resourcePriorityName = "nvidia.com/priority";
    private boolean overwriteEnv;
    private int defaultMemory;
    private int defaultCores;
    private int defaultGPUNum = 1;
    private int memoryFactor = 1;
    private boolean disableCoreLimit;
    private String gpuCorePolicy = "default";
    private String runtimeClassName = "";
    private List<MigProfileAllowance> migProfileAllowlist = List.of();
    private int deviceSplitCount = 10;
    private double deviceMemoryScaling = 1.0;
    private double deviceCoreScaling = 1.0;
    private long preConfiguredDeviceMemory;
    private String libCudaLogLevel = "1";
    private boolean enableNumaTopology;
    private String nodeSchedulerPolicy = "binpack";
    private String gpuSchedulerPolicy = "spread";
    private WatchdogConfig watchdog = WatchdogConfig.DEFAULT;
    private Set<String> disableControlNamespaces = Set.of();
    private List<String> webhookIgnoreLabelNamespaces = List.of();

    private Builder() {}

    private Builder(DeviceConfig c) {
      resourceCountName = c.resourceCountName;
      resourceMemoryName = c.resourceMemoryName;
      resourceMemoryPercentageName = c.resourceMemoryPercentageName;
      resourceCoreName = c.resourceCoreName;
      resourcePriorityName = c.resourcePriorityName;
      overwriteEnv = c.overwriteEnv;
      defaultMemory = c.defaultMemory;
      defaultCores = c.defaultCores;
      defaultGPUNum = c.defaultGPUNum;
      memoryFactor = c.memoryFactor;
      disableCoreLimit = c.disableCoreLimit;
      gpuCorePolicy = c.gpuCorePolicy;
      runtimeClassName = c.runtimeClassName;
      migProfileAllowlist = c.migProfileAllowlist;
      deviceSplitCount = c.deviceSplitCount;
      deviceMemoryScaling = c.deviceMemoryScaling;
      deviceCoreScaling = c.deviceCoreScaling;
      preConfiguredDeviceMemory = c.preConfiguredDeviceMemory;
      libCudaLogLevel = c.libCudaLogLevel;
      enableNumaTopology = c.enableNumaTopology;
      nodeSchedulerPolicy = c.nodeSchedulerPolicy;
      gpuSchedulerPolicy = c.gpuSchedulerPolicy;
      watchdog = c.watchdog;
      disableControlNamespaces = c.disableControlNamespaces;
      webhookIgnoreLabelNamespaces = c.webhookIgnoreLabelNamespaces;
    }

    /** Sets {@code resourceCountName}. */
    public Builder resourceCountName(String v) {
      resourceCountName = v;
      return this;
    }

    /** Sets {@code resourceMemoryName}. */
    public Builder resourceMemoryName(String v) {
      resourceMemoryName = v;
      return this;
    }

    /** Sets {@code resourceMemoryPercentageName}. */
    public Builder resourceMemoryPercentageName(String v) {
      resourceMemoryPercentageName = v;
      return this;
    }

    /** Sets {@code resourceCoreName}. */
    public Builder resourceCoreName(String v) {
      resourceCoreName = v;
      return this;
    }

    /** Sets {@code resourcePriorityName}. */
    public Builder resourcePriorityName(String v) {
      resourcePriorityName = v;
      return this;
    }

    /** Sets {@code overwriteEnv}. */
    public Builder overwriteEnv(boolean v) {
      overwriteEnv = v;
      return this;
    }

    /** Sets {@code defaultMemory}. */
    public Builder defaultMemory(int v) {
      defaultMemory = v;
      return this;
    }

    /** Sets {@code defaultCores}. */
    public Builder defaultCores(int v) {
      defaultCores = v;
      return this;
    }

    /** Sets {@code defaultGPUNum}. */
    public Builder defaultGPUNum(int v) {
      defaultGPUNum = v;
      return this;
    }

    /** Sets {@code memoryFactor}. */
    public Builder memoryFactor(int v) {
      memoryFactor = v;
      return this;
    }

    /** Sets {@code disableCoreLimit}. */
    public Builder disableCoreLimit(boolean v) {
      disableCoreLimit = v;
      return this;
    }

    /** Sets {@code gpuCorePolicy}. */
    public Builder gpuCorePolicy(String v) {
      gpuCorePolicy = v;
      return this;
    }

    /** Sets {@code runtimeClassName}. */
    public Builder runtimeClassName(String v) {
      runtimeClassName = v;
      return this;
    }

    /** Sets {@code migProfileAllowlist}. */
    public Builder migProfileAllowlist(List<MigProfileAllowance> v) {
      migProfileAllowlist = v;
      return this;
    }

    /** Sets {@code deviceSplitCount}. */
    public Builder deviceSplitCount(int v) {
      deviceSplitCount = v;
      return this;
    }

    /** Sets {@code deviceMemoryScaling}. */
    public Builder deviceMemoryScaling(double v) {
      deviceMemoryScaling = v;
      return this;
    }

    /** Sets {@code deviceCoreScaling}. */
    public Builder deviceCoreScaling(double v) {
      deviceCoreScaling = v;
      return this;
    }

    /** Sets {@code preConfiguredDeviceMemory}. */
    public Builder preConfiguredDeviceMemory(long v) {
      preConfiguredDeviceMemory = v;
      return this;
    }

    /** Sets {@code libCudaLogLevel}. */
    public Builder libCudaLogLevel(String v) {
      libCudaLogLevel = v;
      return this;
    }

    /** Sets {@code enableNumaTopology}. */
    public Builder enableNumaTopology(boolean v) {
      enableNumaTopology = v;
      return this;
    }

    /** Sets {@code nodeSchedulerPolicy}. */
    public Builder nodeSchedulerPolicy(String v) {
      nodeSchedulerPolicy = v;
      return this;
    }

    /** Sets {@code gpuSchedulerPolicy}. */
    public Builder gpuSchedulerPolicy(String v) {
      gpuSchedulerPolicy = v;
      return this;
    }

    /** Sets {@code watchdog}. */
    public Builder watchdog(WatchdogConfig v) {
      watchdog = v;
      return this;
    }

    /** Sets {@code disableControlNamespaces}. */
    public Builder disableControlNamespaces(Set<String> v) {
      disableControlNamespaces = v;
      return this;
    }

    /** Sets {@code webhookIgnoreLabelNamespaces}. */
    public Builder webhookIgnoreLabelNamespaces(List<String> v) {
      webhookIgnoreLabelNamespaces = v;
      return this;
    }

    /**
     * Builds the configuration.
     *
     * @throws IllegalArgumentException when a sharing value is out of range
     */
    public DeviceConfig build() {
      return new DeviceConfig(
          resourceCountName,
          resourceMemoryName,
          resourceMemoryPercentageName,
          resourceCoreName,
          resourcePriorityName,
          overwriteEnv,
          defaultMemory,
          defaultCores,
          defaultGPUNum,
          memoryFactor,
          disableCoreLimit,
          gpuCorePolicy,
          runtimeClassName,
          migProfileAllowlist,
          deviceSplitCount,
          deviceMemoryScaling,
          deviceCoreScaling,
          preConfiguredDeviceMemory,
          libCudaLogLevel,
          enableNumaTopology,
          nodeSchedulerPolicy,
          gpuSchedulerPolicy,
          watchdog,
          disableControlNamespaces,
          webhookIgnoreLabelNamespaces);
    }
  }
}
