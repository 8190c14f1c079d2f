package io.vgpu.k8s.server;

import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Gauge families built up during one scrape, every point carrying HAMi's constant label {@code
 * zone="vGPU"} (HAMi adds it with a wrapping registerer), so HAMi's dashboards select them unchanged.
 * Not thread-safe: one instance per scrape.
 */
public final class ZonedGauges {
  private final Map<String, GaugeSnapshot.Builder> builders = new LinkedHashMap<>();

  /** Adds one point to the family {@code name}, creating it with {@code help} on first use. */
  public void gauge(String name, String help, double value, String... labels) {
    String[] withZone = new String[labels.length + 2];
    System.arraycopy(labels, 0, withZone, 0, labels.length);
    withZone[labels.length] = "zone";
    withZone[labels.length + 1] = "vGPU";
    builders
        .computeIfAbsent(name, n -> GaugeSnapshot.builder().name(n).help(help))
        .dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of(withZone)).value(value).build());
  }

  /** The families collected. */
  public MetricSnapshots build() {
    List<MetricSnapshot> out = new ArrayList<>();
    builders.values().forEach(b -> out.add(b.build()));
    return new MetricSnapshots(out);
  }
}
