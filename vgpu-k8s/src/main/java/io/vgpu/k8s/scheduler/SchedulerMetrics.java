package io.vgpu.k8s.scheduler;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;
import io.vgpu.api.PodRef;
import io.vgpu.core.Engine;
import io.vgpu.k8s.server.TextExposition;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
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
  private final Histogram filterSeconds;
  private final Histogram bindSeconds;
  private final Counter filterFailures;
  private final Gauge unschedulable;
  private final Gauge rebuildSeconds;
  private final PrometheusRegistry registry;
  private final LedgerGauges ledger;
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
    registry.register(buildInfo(version));
    this.registry = registry;
    this.ledger = new LedgerGauges(engine, legacy);
  }

  /**
   * The text exposition of the registry's metrics and HAMi's ledger gauges, families sorted by name as
   * the client library sorts a registry's, byte for byte what its text writer makes of them. The
   * ledger's are written straight from the engine: at thousands of cards they are nearly all of the
   * exposition, and building them as snapshots first tripled a scrape's CPU and quadrupled its garbage.
   */
  public byte[] exposition() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    writeExposition(out);
    return out.toByteArray();
  }

  /**
   * Writes {@link #exposition} into {@code sink} as it is made, a chunk at a time, so that a scrape at
   * thousands of cards holds one chunk of its text at once rather than all of it.
   */
  public void writeExposition(OutputStream sink) throws IOException {
    MetricSnapshots others = registry.scrape();
    LedgerGauges.Reading reading = ledger.read();
    TextExposition out = new TextExposition(sink);
    PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
    List<TextExposition.Family> ledgerFamilies = ledger.families();
    int next = 0;
    try {
      for (MetricSnapshot snapshot : others) {
        String name = snapshot.getMetadata().getPrometheusName();
        for (; next < ledgerFamilies.size() && ledgerFamilies.get(next).name().compareTo(name) < 0; next++) {
          ledger.write(ledgerFamilies.get(next), reading, out);
        }
        ByteArrayOutputStream one = new ByteArrayOutputStream();
        writer.write(one, MetricSnapshots.of(snapshot));
        out.append(one.toByteArray());
      }
      for (; next < ledgerFamilies.size(); next++) {
        ledger.write(ledgerFamilies.get(next), reading, out);
      }
      out.flush();
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
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
}
