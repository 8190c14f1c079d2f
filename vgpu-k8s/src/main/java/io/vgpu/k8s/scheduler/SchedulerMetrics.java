package io.vgpu.k8s.scheduler;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.ResourceSchema;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.server.ZonedGauges;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The scheduler's metrics: HAMi's gauges with HAMi's names and labels (so HAMi's dashboards keep
 * working), read from the ledger at scrape time, plus what HAMi lacks: filter and bind latency,
 * unschedulable pods by reason, and how long the last ledger rebuild took.
 */
public final class SchedulerMetrics {
  private static final double MIB = 1024.0 * 1024.0;

  private final Histogram filterSeconds;
  private final Histogram bindSeconds;
  private final Counter filterFailures;
  private final Gauge unschedulable;
  private final Gauge rebuildSeconds;
  /** Each pod's last filter failure, by the most common reason, with the UID of the pod it was. */
  private final Map<PodRef, Unschedulable> unschedulablePods = new ConcurrentHashMap<>();

  private record Unschedulable(@Nullable String uid, String reason) {}

  /**
   * Registers the metrics.
   *
   * @param legacy whether to also emit HAMi's pre-2.5 metric names ({@code --legacy-metrics})
   */
  public SchedulerMetrics(PrometheusRegistry registry, Engine engine, boolean legacy, String version) {
    double[] latencyBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    filterSeconds =
        Histogram.builder().name("vgpu_filter_duration_seconds").help("Time to answer one extender filter call").unit(Unit.SECONDS)
            .classicUpperBounds(latencyBuckets).labelNames("result").register(registry);
    bindSeconds =
        Histogram.builder().name("vgpu_bind_duration_seconds").help("Time to answer one extender bind call").unit(Unit.SECONDS)
            .classicUpperBounds(latencyBuckets).labelNames("result").register(registry);
    filterFailures =
        Counter.builder().name("vgpu_filter_failures_total").help("Filter calls that found no node, by the most common reason").labelNames("reason").register(registry);
    unschedulable =
        Gauge.builder().name("vgpu_unschedulable_pods").help("Pods whose last filter found no node, by the most common reason").labelNames("reason").register(registry);
    rebuildSeconds =
        Gauge.builder().name("vgpu_ledger_rebuild_duration_seconds").help("How long the last rebuild of the ledger from the cluster took").unit(Unit.SECONDS).register(registry);
    registry.register(new LedgerCollector(engine, legacy));
    registry.register(buildInfo(version));
  }

  /** Records one filter call. */
  public void filtered(long nanos, boolean fitted) {
    filterSeconds.labelValues(fitted ? "fit" : "unschedulable").observe(nanos / 1e9);
  }

  /** Records one bind call. */
  public void bound(long nanos, boolean ok) {
    bindSeconds.labelValues(ok ? "bound" : "failed").observe(nanos / 1e9);
  }

  /**
   * Records that a pod fits nowhere, for the given most common reason.
   *
   * @param uid the pod's UID, null when it has none
   */
  public void unschedulable(PodRef pod, @Nullable String uid, String reason) {
    filterFailures.labelValues(reason).inc();
    unschedulablePods.put(pod, new Unschedulable(uid, reason));
    refreshUnschedulable();
  }

  /** Records that a pod is no longer unschedulable: it was placed. */
  public void schedulable(PodRef pod) {
    if (unschedulablePods.remove(pod) != null) {
      refreshUnschedulable();
    }
  }

  /**
   * Records that a pod was deleted: it no longer counts as unschedulable, unless what counts under its
   * name is a later pod of that name (another UID).
   */
  public void deleted(PodRef pod, @Nullable String uid) {
    Unschedulable last = unschedulablePods.get(pod);
    if (last != null && (uid == null || last.uid() == null || uid.equals(last.uid())) && unschedulablePods.remove(pod, last)) {
      refreshUnschedulable();
    }
  }

  private synchronized void refreshUnschedulable() {
    Map<String, Integer> counts = new LinkedHashMap<>();
    unschedulablePods.values().forEach(u -> counts.merge(u.reason(), 1, Integer::sum));
    unschedulable.clear();
    counts.forEach((reason, n) -> unschedulable.labelValues(reason).set(n));
  }

  /** Records the duration of a ledger rebuild. */
  public void rebuilt(long nanos) {
    rebuildSeconds.set(nanos / 1e9);
  }

  private static MultiCollector buildInfo(String version) {
    return () ->
        MetricSnapshots.of(
            GaugeSnapshot.builder()
                .name("hami_build_info")
                .help("Build information of the scheduler")
                .dataPoint(
                    GaugeDataPointSnapshot.builder()
                        .labels(Labels.of(
                            "version", version,
                            "revision", "",
                            "build_date", "",
                            "go_version", "java" + System.getProperty("java.version"),
                            "compiler", "javac",
                            "platform", System.getProperty("os.name").toLowerCase() + "/" + System.getProperty("os.arch")))
                        .value(1)
                        .build())
                .build());
  }

  /** HAMi's ledger gauges, computed from the engine at scrape time. */
  private static final class LedgerCollector implements MultiCollector {
    private final Engine engine;
    private final boolean legacy;

    LedgerCollector(Engine engine, boolean legacy) {
      this.engine = engine;
      this.legacy = legacy;
    }

    @Override
    public MetricSnapshots collect() {
      ZonedGauges f = new ZonedGauges();
      Map<String, DeviceUsage> byUuid = new LinkedHashMap<>();
      for (NodeUsage node : engine.usage()) {
        for (DeviceUsage d : node.devices()) {
          byUuid.put(d.device().uuid(), d);
          String idx = Integer.toString(d.device().index());
          String type = d.device().type();
          String cores = Integer.toString(d.device().cores());
          f.gauge("hami_gpu_memory_limit_bytes", "Device memory limit for a certain GPU", d.device().memoryMiB() * MIB,
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_type", type);
          f.gauge("hami_gpu_core_limit_ratio", "Device core limit for a certain GPU", d.device().cores(),
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_type", type);
          f.gauge("hami_gpu_memory_allocated_bytes", "Device memory allocated for a certain GPU", d.usedMemoryMiB() * MIB,
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_cores", cores, "device_type", type);
          f.gauge("hami_gpu_shared_count", "Number of containers sharing this GPU", d.sharers(),
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_type", type);
          f.gauge("hami_gpu_core_allocated_ratio", "Device core allocated for a certain GPU", d.usedCores(),
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_type", type);
          f.gauge("hami_node_gpu_overview", "GPU overview on a certain node", d.usedMemoryMiB() * MIB,
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_cores", cores,
              "device_memory_limit", Integer.toString(d.device().memoryMiB()), "device_type", type);
          if (d.device().memoryMiB() > 0) {
            f.gauge("hami_node_gpu_memory_allocated_ratio", "GPU Memory Allocated Percentage on a certain GPU",
                (double) d.usedMemoryMiB() / d.device().memoryMiB(),
                "node", node.node(), "device_uuid", d.device().uuid(), "device_index", idx, "device_type", type);
          }
          if (legacy) {
            f.gauge("GPUDeviceMemoryLimit", "Device memory limit for a certain GPU", d.device().memoryMiB() * MIB,
                "nodeid", node.node(), "deviceuuid", d.device().uuid(), "deviceidx", idx, "devicetype", type);
            f.gauge("GPUDeviceCoreLimit", "Device memory core limit for a certain GPU", d.device().cores(),
                "nodeid", node.node(), "deviceuuid", d.device().uuid(), "deviceidx", idx, "devicetype", type);
            f.gauge("GPUDeviceMemoryAllocated", "Device memory allocated for a certain GPU", d.usedMemoryMiB() * MIB,
                "nodeid", node.node(), "deviceuuid", d.device().uuid(), "deviceidx", idx, "devicecores", cores, "devicetype", type);
            f.gauge("GPUDeviceSharedNum", "Number of containers sharing this GPU", d.sharers(),
                "nodeid", node.node(), "deviceuuid", d.device().uuid(), "deviceidx", idx, "devicetype", type);
            f.gauge("GPUDeviceCoreAllocated", "Device core allocated for a certain GPU", d.usedCores(),
                "nodeid", node.node(), "deviceuuid", d.device().uuid(), "deviceidx", idx, "devicetype", type);
          }
        }
      }
      ResourceSchema schema = engine.config().schema();
      for (QuotaUsage q : engine.quotas()) {
        quota(f, q.namespace(), schema.memoryResource(), q.limits().memoryMiB(), q.usedMemoryMiB());
        quota(f, q.namespace(), schema.coresResource(), q.limits().cores(), q.usedCores());
      }
      for (PodGrant grant : engine.grants()) {
        List<ContainerGrant> containers = grant.allContainers();
        for (int c = 0; c < containers.size(); c++) {
          for (DeviceGrant d : containers.get(c).devices()) {
            String[] labels = {
              "namespace", grant.pod().namespace(), "node", grant.node(), "pod", grant.pod().name(),
              "container_index", Integer.toString(c), "device_uuid", d.uuid()
            };
            f.gauge("hami_vgpu_memory_allocated_bytes", "vGPU memory allocated from a container", d.memoryMiB() * MIB, labels);
            f.gauge("hami_vgpu_core_allocated_ratio", "vGPU core allocated from a container", d.cores(), labels);
          }
        }
      }
      return f.build();
    }

    private void quota(ZonedGauges f, String namespace, String resource, long limit, long used) {
      if (limit == QuotaLimits.UNLIMITED && used == 0) {
        return;
      }
      String limitLabel = limit == QuotaLimits.UNLIMITED ? "0" : Long.toString(limit);
      f.gauge("hami_resource_quota_used", "resourcequota usage for a certain device", used,
          "namespace", namespace, "quota_name", resource, "limit", limitLabel);
      if (limit != QuotaLimits.UNLIMITED) {
        f.gauge("hami_resource_quota_limit", "resourcequota limit for a certain device", limit, "namespace", namespace, "quota_name", resource);
      }
    }
  }

}
