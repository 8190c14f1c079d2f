package io.vgpu.k8s.scheduler;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link SchedulerServer} runs; the names follow HAMi's scheduler flags so its Helm values carry
 * over.
 *
 * @param httpBind extender and webhook address ({@code --http_bind}, default {@code 127.0.0.1:8080})
 * @param certFile TLS certificate (PEM); empty serves plain HTTP
 * @param keyFile TLS key (PEM)
 * @param metricsBind metrics address ({@code --metrics-bind-address}, default {@code :9395})
 * @param schedulerName the scheduler GPU pods are handed to by the webhook ({@code --scheduler-name})
 * @param overwriteDefaultScheduler whether GPU pods naming {@code default-scheduler} are handed over too
 *     ({@code --force-overwrite-default-scheduler}, default true)
 * @param nodeSchedulerPolicy default node policy; empty keeps the device config's
 * @param gpuSchedulerPolicy default device policy; empty keeps the device config's
 * @param deviceConfigFile HAMi's device-config YAML, if any
 * @param nodeLockTimeout when a node lock expires ({@code --node-lock-timeout}, default 5m)
 * @param nodeLockRetryTimeout how long PodGroup members retry a contended lock (default 28s)
 * @param leaderElect whether to follow kube-scheduler's Lease ({@code --leader-elect})
 * @param leaseName the Lease's name ({@code --leader-elect-resource-name})
 * @param leaseNamespace the Lease's namespace ({@code --leader-elect-resource-namespace})
 * @param identity this instance's hostname, which the Lease holder must start with
 * @param staleReservationTimeout when a pod filtered but never bound gives its reservation back
 * @param nodeLabelSelector only nodes with these labels are registered ({@code --node-label-selector})
 * @param legacyMetrics also emit HAMi's old metric names
 * @param syncTimeout how long startup waits for the informer caches
 */
public record SchedulerOptions(
    String httpBind,
    Optional<Path> certFile,
    Optional<Path> keyFile,
    String metricsBind,
    String schedulerName,
    boolean overwriteDefaultScheduler,
    String nodeSchedulerPolicy,
    String gpuSchedulerPolicy,
    Optional<Path> deviceConfigFile,
    Duration nodeLockTimeout,
    Duration nodeLockRetryTimeout,
    boolean leaderElect,
    String leaseName,
    String leaseNamespace,
    String identity,
    Duration staleReservationTimeout,
    Map<String, String> nodeLabelSelector,
    boolean legacyMetrics,
    Duration syncTimeout) {

  /** Validates the fields. */
  public SchedulerOptions {
    Objects.requireNonNull(httpBind, "httpBind");
    Objects.requireNonNull(metricsBind, "metricsBind");
    nodeLabelSelector = Map.copyOf(nodeLabelSelector);
    if (certFile.isPresent() != keyFile.isPresent()) {
      throw new IllegalArgumentException("--cert_file and --key_file must be given together");
    }
    if (leaderElect && (leaseName.isEmpty() || leaseNamespace.isEmpty())) {
      throw new IllegalArgumentException("--leader-elect needs --leader-elect-resource-name and --leader-elect-resource-namespace");
    }
  }

  /** HAMi's defaults, for tests and embedding. */
  public static SchedulerOptions defaults() {
    return new SchedulerOptions(
        "127.0.0.1:8080",
        Optional.empty(),
        Optional.empty(),
        ":9395",
        "",
        true,
        "",
        "",
        Optional.empty(),
        Duration.ofMinutes(5),
        Duration.ofSeconds(28),
        false,
        "",
        "",
        "",
        Duration.ofMinutes(5),
        Map.of(),
        false,
        Duration.ofMinutes(2));
  }

  /** Returns a copy with other bind addresses. */
  public SchedulerOptions withBinds(String http, String metrics) {
    return new SchedulerOptions(http, certFile, keyFile, metrics, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity, staleReservationTimeout, nodeLabelSelector,
        legacyMetrics, syncTimeout);
  }

  /** Returns a copy with another stale-reservation timeout. */
  public SchedulerOptions withStaleReservationTimeout(Duration value) {
    return new SchedulerOptions(httpBind, certFile, keyFile, metricsBind, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity, value, nodeLabelSelector, legacyMetrics,
        syncTimeout);
  }

  /** Returns a copy following a Lease. */
  public SchedulerOptions withLeaderElection(String name, String namespace, String hostname) {
    return new SchedulerOptions(httpBind, certFile, keyFile, metricsBind, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, true, name, namespace, hostname, staleReservationTimeout, nodeLabelSelector, legacyMetrics,
        syncTimeout);
  }
}
