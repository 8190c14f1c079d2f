package io.vgpu.k8s.deviceplugin;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.server.ZonedGauges;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodRefs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * HAMi's node metrics (vGPUmonitor's names and labels, {@code zone="vGPU"}): the host's GPUs as the
 * driver sees them, and every granted container's usage read from its shared region. A container is
 * reported from the moment its pod is granted cards — with its limits and zero usage until its first
 * CUDA call creates the region — not only once it touches the GPU. Every process of the container can
 * write its region, so the limit reported is always the grant's, never the region's; usage is what the
 * container's processes report (issue 12's node watchdog checks it against the driver's own numbers).
 * The region's directory is writable by its container too, so the file is opened without following or
 * blocking ({@link RegionFile}); a file that is not a region is logged once per container and that
 * container reads as unused.
 */
public final class NodeMonitor implements MultiCollector {
  private static final Logger LOG = LoggerFactory.getLogger(NodeMonitor.class);
  private static final double MIB = 1024.0 * 1024.0;

  /** The host's GPUs as the driver reports them. */
  @FunctionalInterface
  public interface HostGpus {
    /** One sample of every GPU; empty when the source offers no live statistics. */
    List<HostGpu> sample();
  }

  /**
   * One GPU as the driver reports it.
   *
   * @param index the GPU's index
   * @param uuid the GPU's UUID
   * @param type the registered type (HAMi's {@code NVIDIA-} prefixed name)
   * @param memoryUsedBytes memory in use on the whole GPU
   * @param utilizationPercent compute utilization, 0-100
   * @param memoryUtilizationPercent memory-controller utilization, 0-100
   */
  public record HostGpu(int index, String uuid, String type, long memoryUsedBytes, int utilizationPercent, int memoryUtilizationPercent) {}

  /**
   * A container granted cards by other means than the scheduler's annotation (a KAI fraction
   * container's grant file), reported like the others.
   *
   * @param pod its pod
   * @param container its name
   * @param devices its cards in ordinal order, each with its MiB
   */
  public record GrantedContainer(Pod pod, String container, List<DeviceGrant> devices) {}

  /** What the driver charges to a container's processes on a card (the node watchdog's figure). */
  @FunctionalInterface
  public interface DriverMemory {
    /** Bytes NVML charges to the container's processes on the card; empty when nothing reads NVML. */
    OptionalLong usedBytes(String podUid, String container, String deviceUuid);
  }

  private final String node;
  private final Supplier<List<Pod>> pods;
  private final BiFunction<String, String, Path> regionOf;
  private final HostGpus host;
  private final DriverMemory driver;
  private final Clock clock;
  private final Consumer<String> report;
  private final Supplier<List<GrantedContainer>> others;
  /** Containers whose region file was reported bad, so each is reported once. */
  private final Set<String> reported = ConcurrentHashMap.newKeySet();

  /**
   * A monitor for one node.
   *
   * @param pods the pods granted cards on this node (those the scheduler assigned here)
   * @param regionOf where the shared region of a container lives on the host, by pod UID and
   *     container name
   */
  public NodeMonitor(String node, Supplier<List<Pod>> pods, BiFunction<String, String, Path> regionOf, HostGpus host, Clock clock) {
    this(node, pods, regionOf, host, (uid, container, uuid) -> OptionalLong.empty(), clock, LOG::warn, List::of);
  }

  /**
   * A monitor that also shows, beside each container's own accounting, what the driver charges to it
   * ({@code hami_vgpu_memory_nvml_used_bytes}).
   */
  public NodeMonitor(String node, Supplier<List<Pod>> pods, BiFunction<String, String, Path> regionOf, HostGpus host, DriverMemory driver, Clock clock) {
    this(node, pods, regionOf, host, driver, clock, LOG::warn, List::of);
  }

  /**
   * A monitor that also reports {@code others}, the containers granted outside the scheduler's
   * annotation (KAI fraction containers), under the same names.
   */
  public NodeMonitor(
      String node, Supplier<List<Pod>> pods, BiFunction<String, String, Path> regionOf, HostGpus host, DriverMemory driver, Clock clock, Supplier<List<GrantedContainer>> others) {
    this(node, pods, regionOf, host, driver, clock, LOG::warn, others);
  }

  /** A monitor without driver figures, with bad region files reported to {@code report} (one line each) instead of the log. */
  NodeMonitor(String node, Supplier<List<Pod>> pods, BiFunction<String, String, Path> regionOf, HostGpus host, Clock clock, Consumer<String> report) {
    this(node, pods, regionOf, host, (uid, container, uuid) -> OptionalLong.empty(), clock, report, List::of);
  }

  private NodeMonitor(
      String node,
      Supplier<List<Pod>> pods,
      BiFunction<String, String, Path> regionOf,
      HostGpus host,
      DriverMemory driver,
      Clock clock,
      Consumer<String> report,
      Supplier<List<GrantedContainer>> others) {
    this.report = report;
    this.others = others;
    this.node = node;
    this.pods = pods;
    this.regionOf = regionOf;
    this.host = host;
    this.driver = driver;
    this.clock = clock;
  }

  @Override
  public MetricSnapshots collect() {
    ZonedGauges f = new ZonedGauges();
    for (HostGpu gpu : host.sample()) {
      String idx = Integer.toString(gpu.index());
      f.gauge("hami_host_gpu_memory_used_bytes", "GPU device memory usage in bytes", gpu.memoryUsedBytes(),
          "node", node, "device_index", idx, "device_uuid", gpu.uuid(), "device_type", gpu.type());
      f.gauge("hami_host_gpu_utilization_ratio", "GPU core utilization ratio (0-100)", gpu.utilizationPercent(),
          "node", node, "device_index", idx, "device_uuid", gpu.uuid(), "device_type", gpu.type());
      f.gauge("hami_host_gpu_memory_controller_utilization_ratio", "GPU memory controller utilization ratio (0-100)", gpu.memoryUtilizationPercent(),
          "device_index", idx, "device_uuid", gpu.uuid(), "device_type", gpu.type());
    }
    long nowNanos = clock.instant().getEpochSecond() * 1_000_000_000L + clock.instant().getNano();
    Set<String> seen = new HashSet<>();
    for (Pod pod : pods.get()) {
      Map<String, String> annotations = PodRefs.annotations(pod);
      String allocated = annotations.get(HamiAnnotations.DEVICES_ALLOCATED);
      String phase = pod.getStatus() == null ? "" : String.valueOf(pod.getStatus().getPhase());
      if (allocated == null || !node.equals(annotations.get(HamiAnnotations.ASSIGNED_NODE)) || phase.equals("Succeeded") || phase.equals("Failed")) {
        continue;
      }
      List<List<DeviceGrant>> perContainer;
      try {
        perContainer = DeviceListCodec.decode(allocated);
      } catch (IllegalArgumentException e) {
        continue;
      }
      List<Container> containers = new ArrayList<>();
      if (pod.getSpec().getInitContainers() != null) {
        containers.addAll(pod.getSpec().getInitContainers());
      }
      containers.addAll(pod.getSpec().getContainers());
      for (int c = 0; c < perContainer.size() && c < containers.size(); c++) {
        List<DeviceGrant> devices = perContainer.get(c);
        if (!devices.isEmpty()) {
          container(f, pod, containers.get(c).getName(), devices, nowNanos, seen);
        }
      }
    }
    for (GrantedContainer g : others.get()) {
      String phase = g.pod().getStatus() == null ? "" : String.valueOf(g.pod().getStatus().getPhase());
      if (!phase.equals("Succeeded") && !phase.equals("Failed") && !seen.contains(g.pod().getMetadata().getUid() + "/" + g.container())) {
        container(f, g.pod(), g.container(), g.devices(), nowNanos, seen);
      }
    }
    // Forget containers that are gone, so the set stays as small as the node's pods.
    reported.retainAll(seen);
    return f.build();
  }

  /** One granted container's series. */
  private void container(ZonedGauges f, Pod pod, String container, List<DeviceGrant> devices, long nowNanos, Set<String> seen) {
    String key = pod.getMetadata().getUid() + "/" + container;
    seen.add(key);
    Optional<List<SharedRegion.DeviceUsage>> region = region(pod, container, key);
    for (int i = 0; i < devices.size(); i++) {
      DeviceGrant grant = devices.get(i);
      SharedRegion.DeviceUsage usage = usageOf(region, i);
      String[] labels = {
        "namespace", pod.getMetadata().getNamespace(), "pod", pod.getMetadata().getName(), "container", container,
        "vdevice_index", Integer.toString(i), "device_uuid", grant.uuid()
      };
      long used = usage == null ? 0 : usage.memoryUsed();
      long limit = (long) (grant.memoryMiB() * MIB);
      long context = usage == null ? 0 : Math.min(usage.contextBytes(), used);
      f.gauge("hami_vgpu_memory_used_bytes", "vGPU device memory usage", used, labels);
      OptionalLong nvml = driver.usedBytes(pod.getMetadata().getUid(), container, grant.uuid());
      if (nvml.isPresent()) {
        f.gauge("hami_vgpu_memory_nvml_used_bytes", "vGPU device memory usage as NVML charges it to the container's processes", nvml.getAsLong(), labels);
      }
      f.gauge("hami_vgpu_memory_limit_bytes", "vGPU device memory limit", limit, labels);
      f.gauge("hami_container_device_memory_bytes", "Container device memory usage in bytes", used, labels);
      f.gauge("hami_container_device_utilization_ratio", "Container device SM utilization ratio", usage == null ? 0 : usage.smUtilPermille() / 10.0, labels);
      f.gauge("hami_vgpu_memory_context_bytes", "Container device memory context size in bytes", context, labels);
      f.gauge("hami_vgpu_memory_module_bytes", "Container device memory module size in bytes", 0, labels);
      f.gauge("hami_vgpu_memory_buffer_bytes", "Container device memory buffer size in bytes", used - context, labels);
      if (usage != null && usage.lastKernelNanos() > 0) {
        f.gauge("hami_container_last_kernel_elapsed_seconds", "Seconds since last kernel execution in container",
            Math.max(0, (nowNanos - usage.lastKernelNanos()) / 1e9), labels);
      }
    }
  }

  /** The container's region, if readable; a file that is not a region is reported once per container. */
  private Optional<List<SharedRegion.DeviceUsage>> region(Pod pod, String container, String key) {
    try {
      List<SharedRegion.DeviceUsage> devices = SharedRegion.inspect(regionOf.apply(pod.getMetadata().getUid(), container));
      reported.remove(key);
      return Optional.of(devices);
    } catch (RegionFile.Refused e) {
      if (!e.notYet() && reported.add(key)) {
        report.accept("pod " + pod.getMetadata().getNamespace() + "/" + pod.getMetadata().getName() + " container " + container + ": "
            + e.getMessage() + "; its usage reads 0 until the file is a region again");
      }
      return Optional.empty();
    }
  }

  private static SharedRegion.DeviceUsage usageOf(Optional<List<SharedRegion.DeviceUsage>> region, int ordinal) {
    if (region.isEmpty()) {
      return null;
    }
    for (SharedRegion.DeviceUsage d : region.get()) {
      if (d.ordinal() == ordinal) {
        return d;
      }
    }
    return null;
  }

}
