package io.vgpu.k8s.watchdog;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.HashSet;
import java.util.Set;

/**
 * The watchdog's metrics, on the node monitor's endpoint: containers found over their grant or using a
 * card without one (per pod, forgotten once the pod is gone from the node), GPU processes it could not
 * hold to any grant, and cards whose processes NVML cannot list. (NVML's figure per container is a node
 * monitor gauge, {@code hami_vgpu_memory_nvml_used_bytes}, beside the interposer's.)
 */
public final class WatchdogMetrics {
  final Counter overGrant =
      Counter.builder()
          .name("vgpu_container_memory_over_grant_total")
          .help("Times NVML saw a container hold more device memory on a card than its grant plus the tolerance for the grace period")
          .labelNames("namespace", "pod", "container")
          .build();
  final Counter withoutGrant =
      Counter.builder()
          .name("vgpu_container_gpu_use_without_grant_total")
          .help("Times NVML saw a container of a pod without a grant hold more device memory on a card than the tolerance for the grace period")
          .labelNames("namespace", "pod", "container")
          .build();
  final Counter unmapped =
      Counter.builder()
          .name("vgpu_unmapped_gpu_processes_total")
          .help("GPU processes the watchdog could not hold to a container's grant, counted once each, by reason")
          .labelNames("device_uuid", "reason")
          .build();
  final Gauge unlistedCards =
      Gauge.builder()
          .name("vgpu_watchdog_unlisted_cards")
          .help("1 while NVML cannot list the processes on the card, so that none of them is held to a grant; 0 once it can again")
          .labelNames("device_uuid")
          .build();

  /** The pods ({@code namespace/name}) with a series in a per-pod counter. */
  private final Set<String> podsCounted = new HashSet<>();

  /** Counters that are kept but served nowhere. */
  public WatchdogMetrics() {}

  /** Counters served by {@code registry}. */
  public WatchdogMetrics(PrometheusRegistry registry) {
    registry.register(overGrant);
    registry.register(withoutGrant);
    registry.register(unmapped);
    registry.register(unlistedCards);
  }

  /** Counts one episode of a container over its grant, or (with {@code ungranted}) using a card without one. */
  void count(boolean ungranted, String namespace, String pod, String container) {
    podsCounted.add(namespace + "/" + pod);
    (ungranted ? withoutGrant : overGrant).labelValues(namespace, pod, container).inc();
  }

  /** Whether a per-pod counter has a series. */
  boolean hasPodSeries() {
    return !podsCounted.isEmpty();
  }

  /** Removes the per-pod series of every pod not among {@code live} ({@code namespace/name}). */
  void forgetPodsOtherThan(Set<String> live) {
    if (podsCounted.retainAll(live)) {
      for (Counter counter : new Counter[] {overGrant, withoutGrant}) {
        counter.removeIf(labels -> !live.contains(labels.get(0) + "/" + labels.get(1)));
      }
    }
  }
}
