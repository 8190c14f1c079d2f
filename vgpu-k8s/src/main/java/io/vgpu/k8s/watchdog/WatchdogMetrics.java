package io.vgpu.k8s.watchdog;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The watchdog's counters, on the node monitor's endpoint: containers found over their grant, and GPU
 * processes it could not hold to any grant. (NVML's figure per container is a node monitor gauge,
 * {@code hami_vgpu_memory_nvml_used_bytes}, beside the interposer's.)
 */
public final class WatchdogMetrics {
  final Counter overGrant =
      Counter.builder()
          .name("vgpu_container_memory_over_grant_total")
          .help("Times NVML saw a container hold more device memory on a card than its grant plus the tolerance for the grace period")
          .labelNames("namespace", "pod", "container")
          .build();
  final Counter unmapped =
      Counter.builder()
          .name("vgpu_unmapped_gpu_processes_total")
          .help("GPU processes the watchdog could not hold to a container's grant, counted once each, by reason")
          .labelNames("device_uuid", "reason")
          .build();

  /** Counters that are kept but served nowhere. */
  public WatchdogMetrics() {}

  /** Counters served by {@code registry}. */
  public WatchdogMetrics(PrometheusRegistry registry) {
    registry.register(overGrant);
    registry.register(unmapped);
  }
}
