package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.vgpu.api.ContainerGrant;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.server.ZonedGauges;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The scheduler's exposition, HAMi's ledger gauges written straight into the text, against the same
 * points built as the client library's snapshots and written by its own text writer: the same bytes.
 */
class LedgerGaugesTest {
  private static final double MIB = 1024.0 * 1024.0;

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theStreamedExpositionIsByteForByteTheClientLibrarysWriting(boolean legacy) throws Exception {
    Engine engine = ledger();
    PrometheusRegistry registry = new PrometheusRegistry();
    SchedulerMetrics metrics = new SchedulerMetrics(registry, engine, legacy, "1.2.3");
    metrics.filtered(3_000_000, true);
    metrics.filtered(40_000_000, false);
    metrics.bound(7_000_000, true);
    metrics.unschedulable(new PodRef("team-a", "big"), "uid-1", "CardInsufficientMemory");
    metrics.rebuilt(1_500_000_000L);

    String streamed = new String(metrics.exposition(), StandardCharsets.UTF_8);
    String reference = reference(registry, engine, legacy);

    assertThat(streamed).isEqualTo(reference);
    // The families the reference has, interleaved with the registry's by name.
    assertThat(streamed).contains("hami_gpu_memory_limit_bytes{device_index=\"0\",device_type=\"NVIDIA A100-SXM4-40GB\"");
    assertThat(streamed).contains("device_type=\"Odd \\\"model\\\" \\\\ with\\nnewline Ä\"");
    assertThat(streamed).contains("hami_vgpu_core_allocated_ratio{container_index=\"1\"");
    assertThat(streamed).contains("hami_resource_quota_limit{").contains("vgpu_filter_duration_seconds_bucket{").contains("hami_build_info{");
    assertThat(streamed.contains("GPUDeviceMemoryLimit{")).isEqualTo(legacy);
  }

  @Test
  void aLedgerWithoutCardsGrantsOrQuotasWritesNoneOfTheirFamilies() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    SchedulerMetrics metrics = new SchedulerMetrics(registry, Engine.create(), true, "1.2.3");

    String streamed = new String(metrics.exposition(), StandardCharsets.UTF_8);

    assertThat(streamed).isEqualTo(reference(registry, Engine.create(), true));
    assertThat(streamed).doesNotContain("hami_gpu_").doesNotContain("GPUDevice").doesNotContain("hami_vgpu_").contains("hami_build_info{");
  }

  /** Two nodes, one with an oddly named card, two pods (one of two containers), a namespace quota. */
  private static Engine ledger() {
    Engine engine = Engine.create();
    engine.upsertNode(NodeDevices.of("worker1", List.of(
        new SchedulableDevice("GPU-w1-0", 0, "NVIDIA A100-SXM4-40GB", 40960, 100, 10, 0, true, SchedulableDevice.MODE_SHARED),
        new SchedulableDevice("GPU-w1-1", 1, "NVIDIA A100-SXM4-40GB", 40960, 100, 10, 0, true, SchedulableDevice.MODE_SHARED))));
    engine.upsertNode(NodeDevices.of("worker2", List.of(
        new SchedulableDevice("GPU-w2-0", 0, "Odd \"model\" \\ with\nnewline Ä", 16384, 100, 4, 0, true, SchedulableDevice.MODE_SHARED))));
    engine.setQuota("team-a", new QuotaLimits(100_000, QuotaLimits.UNLIMITED));
    place(engine, PodRequest.of(new PodRef("team-a", "one"), List.of(new ContainerRequest("c", 1, 3000, ContainerRequest.UNSET, 33))));
    place(engine, PodRequest.of(new PodRef("team-b", "two"), List.of(
        new ContainerRequest("a", 1, 1024, ContainerRequest.UNSET, 10), new ContainerRequest("b", 2, 2048, ContainerRequest.UNSET, 5))));
    return engine;
  }

  private static void place(Engine engine, PodRequest request) {
    FilterResult result = engine.filter(engine.compile(request), null, false);
    assertThat(result.placement()).as("%s places", request.pod()).isPresent();
    assertThat(engine.reserve(result.placement().get()).reserved()).isTrue();
  }

  /** The registry's families and the ledger's as snapshots, written by the client library. */
  private static String reference(PrometheusRegistry registry, Engine engine, boolean legacy) throws Exception {
    List<MetricSnapshot> all = new ArrayList<>();
    registry.scrape().forEach(all::add);
    snapshots(engine, legacy).forEach(all::add);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, new MetricSnapshots(all));
    return out.toString(StandardCharsets.UTF_8);
  }

  /** HAMi's ledger gauges built point by point as snapshots (how the scheduler built them before). */
  private static MetricSnapshots snapshots(Engine engine, boolean legacy) {
    ZonedGauges f = new ZonedGauges();
    for (NodeUsage node : engine.usage()) {
      for (DeviceUsage d : node.devices()) {
        cardGauges(f, HAMI, node.node(), d);
        if (d.device().memoryMiB() > 0) {
          f.gauge("hami_node_gpu_memory_allocated_ratio", "GPU Memory Allocated Percentage on a certain GPU", (double) d.usedMemoryMiB() / d.device().memoryMiB(),
              "node", node.node(), "device_uuid", d.device().uuid(), "device_index", Integer.toString(d.device().index()), "device_type", d.device().type());
        }
        f.gauge("hami_node_gpu_overview", "GPU overview on a certain node", d.usedMemoryMiB() * MIB,
            "node", node.node(), "device_uuid", d.device().uuid(), "device_index", Integer.toString(d.device().index()), "device_cores", Integer.toString(d.device().cores()),
            "device_memory_limit", Integer.toString(d.device().memoryMiB()), "device_type", d.device().type());
        if (legacy) {
          cardGauges(f, LEGACY, node.node(), d);
        }
      }
    }
    String memory = engine.config().schema().memoryResource();
    String cores = engine.config().schema().coresResource();
    for (QuotaUsage q : engine.quotas()) {
      quota(f, q.namespace(), memory, q.limits().memoryMiB(), q.usedMemoryMiB());
      quota(f, q.namespace(), cores, q.limits().cores(), q.usedCores());
    }
    for (PodGrant grant : engine.grants()) {
      List<ContainerGrant> containers = grant.allContainers();
      for (int c = 0; c < containers.size(); c++) {
        for (DeviceGrant d : containers.get(c).devices()) {
          String[] labels = {"namespace", grant.pod().namespace(), "node", grant.node(), "pod", grant.pod().name(), "container_index", Integer.toString(c), "device_uuid", d.uuid()};
          f.gauge("hami_vgpu_memory_allocated_bytes", "vGPU memory allocated from a container", d.memoryMiB() * MIB, labels);
          f.gauge("hami_vgpu_core_allocated_ratio", "vGPU core allocated from a container", d.cores(), labels);
        }
      }
    }
    return f.build();
  }

  /** The names of one of HAMi's two sets of per-card gauges: families (with their help), then labels. */
  private record CardNames(String[] families, String[] helps, String node, String uuid, String index, String cores, String type) {}

  private static final CardNames HAMI = new CardNames(
      new String[] {"hami_gpu_memory_limit_bytes", "hami_gpu_core_limit_ratio", "hami_gpu_memory_allocated_bytes", "hami_gpu_shared_count", "hami_gpu_core_allocated_ratio"},
      new String[] {"Device memory limit for a certain GPU", "Device core limit for a certain GPU", "Device memory allocated for a certain GPU",
          "Number of containers sharing this GPU", "Device core allocated for a certain GPU"},
      "node", "device_uuid", "device_index", "device_cores", "device_type");
  private static final CardNames LEGACY = new CardNames(
      new String[] {"GPUDeviceMemoryLimit", "GPUDeviceCoreLimit", "GPUDeviceMemoryAllocated", "GPUDeviceSharedNum", "GPUDeviceCoreAllocated"},
      new String[] {"Device memory limit for a certain GPU", "Device memory core limit for a certain GPU", "Device memory allocated for a certain GPU",
          "Number of containers sharing this GPU", "Device core allocated for a certain GPU"},
      "nodeid", "deviceuuid", "deviceidx", "devicecores", "devicetype");

  /** A card's limit, allocation and sharing gauges under one set of names (the allocated memory also names the card's cores). */
  private static void cardGauges(ZonedGauges f, CardNames names, String node, DeviceUsage d) {
    double[] values = {d.device().memoryMiB() * MIB, d.device().cores(), d.usedMemoryMiB() * MIB, d.sharers(), d.usedCores()};
    String[] labels = {names.node(), node, names.uuid(), d.device().uuid(), names.index(), Integer.toString(d.device().index()), names.type(), d.device().type()};
    String[] withCores = {names.node(), node, names.uuid(), d.device().uuid(), names.index(), Integer.toString(d.device().index()),
        names.cores(), Integer.toString(d.device().cores()), names.type(), d.device().type()};
    for (int g = 0; g < values.length; g++) {
      f.gauge(names.families()[g], names.helps()[g], values[g], g == 2 ? withCores : labels);
    }
  }

  private static void quota(ZonedGauges f, String namespace, String resource, long limit, long used) {
    if (limit == QuotaLimits.UNLIMITED && used == 0) {
      return;
    }
    f.gauge("hami_resource_quota_used", "resourcequota usage for a certain device", used,
        "namespace", namespace, "quota_name", resource, "limit", limit == QuotaLimits.UNLIMITED ? "0" : Long.toString(limit));
    if (limit != QuotaLimits.UNLIMITED) {
      f.gauge("hami_resource_quota_limit", "resourcequota limit for a certain device", limit, "namespace", namespace, "quota_name", resource);
    }
  }
}
