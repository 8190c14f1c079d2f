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
 * @param httpBind webhook address, and the extender's unless it has its own ({@code --http_bind},
 *     default {@code 127.0.0.1:8080})
 * @param certFile TLS certificate (PEM); empty serves plain HTTP
 * @param keyFile TLS key (PEM)
 * @param extenderBind the extender's own address ({@code --extender-bind-address}), e.g. loopback when
 *     kube-scheduler runs in the same pod; empty serves it on {@code httpBind}
 * @param clientCaFile CA bundle whose client certificates {@code /filter} and {@code /bind} require
 *     ({@code --client-ca-file}); empty leaves the extender open to any caller
 * @param webhookClientCaFile CA bundle whose client certificates {@code /webhook} requires ({@code
 *     --webhook-client-ca-file}); for API servers given an admission kubeconfig with a certificate
 * @param metricsBind metrics and health address ({@code --metrics-bind-address}, default {@code :9395})
 * @param schedulerName the scheduler GPU pods are handed to by the webhook ({@code --scheduler-name})
 * @param overwriteDefaultScheduler whether GPU pods naming {@code default-scheduler} are handed over too
 *     ({@code --force-overwrite-default-scheduler}, default true)
 * @param nodeSchedulerPolicy default node policy; empty keeps the device config's
 * @param gpuSchedulerPolicy default device policy; empty keeps the device config's
 * @param deviceConfigFile HAMi's device-config YAML, if any
 * @param nodeLockTimeout when a node lock expires ({@code --node-lock-timeout}, default 5m)
 * @param nodeLockRetryTimeout how long a bind waits for a contended node lock ({@code --node-lock-retry-timeout},
 *     default 28s, within kube-scheduler's 30s extender timeout)
 * @param leaderElect whether to follow kube-scheduler's Lease ({@code --leader-elect})
 * @param leaseName the Lease's name ({@code --leader-elect-resource-name})
 * @param leaseNamespace the Lease's namespace ({@code --leader-elect-resource-namespace})
 * @param identity this instance's hostname; the Lease holder must be it followed by {@code _<uuid>}
 * @param staleReservationTimeout when a pod filtered but never bound gives its reservation back
 * @param nodeLabelSelector only nodes with these labels are registered ({@code --node-label-selector})
 * @param legacyMetrics also emit HAMi's old metric names
 * @param syncTimeout how long startup waits for the informer caches
 * @param placeCpuOnlyPods whether the webhook hands pods that ask for no GPU to this scheduler too and
 *     the extender picks their node by the placement policy ({@code --place-cpu-only-pods}, default
 *     false: kube-scheduler places them, as with HAMi)
 * @param grantKeySecret the Secret {@code NAMESPACE/NAME} holding the key the scheduler signs each grant
 *     with ({@code --grant-key-secret}), made at start when missing; empty writes no signature
 * @param kaiDialect the scheduler name of KAI Scheduler's pod dialect when this scheduler schedules
 *     such pods itself ({@code --kai-dialect} with {@code --kai-scheduler-name}, default {@code
 *     kai-scheduler}): the webhook hands them over, the extender charges them to their KAI queue and
 *     places their gangs whole; empty leaves them to KAI
 * @param gangHoldTimeout how long a gang's reservation waits for all its members to be bound before
 *     those not bound give theirs back ({@code --gang-hold-timeout}, default 60s)
 * @param warmUpRounds rounds of the request path run on made-up pods before the listeners start, so
 *     that the first pods find it compiled ({@code --warm-up-rounds}; 0 runs none, as here by default;
 *     a JVM without C2 runs at most {@code WarmUpRounds.WITHOUT_C2} of them)
 */
public record SchedulerOptions(
    String httpBind,
    Optional<Path> certFile,
    Optional<Path> keyFile,
    String extenderBind,
    Optional<Path> clientCaFile,
    Optional<Path> webhookClientCaFile,
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
    Duration syncTimeout,
    boolean placeCpuOnlyPods,
    Optional<String> grantKeySecret,
    Optional<String> kaiDialect,
    Duration gangHoldTimeout,
    int warmUpRounds) {

  /** Validates the fields. */
  public SchedulerOptions {
    Objects.requireNonNull(httpBind, "httpBind");
    Objects.requireNonNull(metricsBind, "metricsBind");
    Objects.requireNonNull(extenderBind, "extenderBind");
    nodeLabelSelector = Map.copyOf(nodeLabelSelector);
    if (certFile.isPresent() != keyFile.isPresent()) {
      throw new IllegalArgumentException("--cert_file and --key_file must be given together");
    }
    if (clientCaFile.isPresent() && certFile.isEmpty()) {
      throw new IllegalArgumentException("--client-ca-file needs --cert_file and --key_file: client certificates are checked over TLS");
    }
    if (webhookClientCaFile.isPresent() && certFile.isEmpty()) {
      throw new IllegalArgumentException("--webhook-client-ca-file needs --cert_file and --key_file: client certificates are checked over TLS");
    }
    Objects.requireNonNull(grantKeySecret, "grantKeySecret");
    Objects.requireNonNull(kaiDialect, "kaiDialect");
    if (kaiDialect.isPresent() && kaiDialect.get().isBlank()) {
      throw new IllegalArgumentException("--kai-scheduler-name must not be empty");
    }
    if (gangHoldTimeout.isNegative() || gangHoldTimeout.isZero()) {
      throw new IllegalArgumentException("--gang-hold-timeout " + gangHoldTimeout + " must be positive");
    }
    if (leaderElect && (leaseName.isEmpty() || leaseNamespace.isEmpty())) {
      throw new IllegalArgumentException("--leader-elect needs --leader-elect-resource-name and --leader-elect-resource-namespace");
    }
    if (warmUpRounds < 0) {
      throw new IllegalArgumentException("--warm-up-rounds " + warmUpRounds + " must not be negative");
    }
  }

  /** HAMi's defaults, for tests and embedding. */
  public static SchedulerOptions defaults() {
    return new SchedulerOptions(
        "127.0.0.1:8080",
        Optional.empty(),
        Optional.empty(),
        "",
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
        Duration.ofMinutes(2),
        false,
        Optional.empty(),
        Optional.empty(),
        Duration.ofSeconds(60),
        0);
  }

  /** Returns a copy with other bind addresses. */
  public SchedulerOptions withBinds(String http, String metrics) {
    return new SchedulerOptions(http, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metrics, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity, staleReservationTimeout, nodeLabelSelector,
        legacyMetrics, syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy whose binds wait this long for a contended node lock. */
  public SchedulerOptions withNodeLockRetryTimeout(Duration value) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, value, leaderElect, leaseName, leaseNamespace, identity, staleReservationTimeout, nodeLabelSelector, legacyMetrics,
        syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy with another stale-reservation timeout. */
  public SchedulerOptions withStaleReservationTimeout(Duration value) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity, value, nodeLabelSelector, legacyMetrics,
        syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy following a Lease. */
  public SchedulerOptions withLeaderElection(String name, String namespace, String hostname) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile,
        nodeLockTimeout, nodeLockRetryTimeout, true, name, namespace, hostname, staleReservationTimeout, nodeLabelSelector, legacyMetrics,
        syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy serving TLS from these PEM files. */
  public SchedulerOptions withTls(Path cert, Path key) {
    return new SchedulerOptions(httpBind, Optional.of(cert), Optional.of(key), extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName,
        overwriteDefaultScheduler, nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName,
        leaseNamespace, identity, staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /**
   * Returns a copy whose extender has its own listener ({@code bind}, empty for none) and requires client
   * certificates of {@code clientCa} (empty for any caller).
   */
  public SchedulerOptions withExtender(String bind, Optional<Path> clientCa, Optional<Path> webhookClientCa) {
    return new SchedulerOptions(httpBind, certFile, keyFile, bind, clientCa, webhookClientCa, metricsBind, schedulerName, overwriteDefaultScheduler,
        nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity,
        staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy that does, or does not, place pods asking for no GPU. */
  public SchedulerOptions withCpuOnlyPodPlacement(boolean value) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler,
        nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity,
        staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, value, grantKeySecret, kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /** Returns a copy that signs grants with the key in the Secret {@code NAMESPACE/NAME}. */
  public SchedulerOptions withGrantKeySecret(String value) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler,
        nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity,
        staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, placeCpuOnlyPods, Optional.of(value), kaiDialect, gangHoldTimeout, warmUpRounds);
  }

  /**
   * Returns a copy that schedules KAI Scheduler's pod dialect itself: pods naming {@code
   * kaiSchedulerName} are handed to this scheduler, charged to their queues and held whole in gangs,
   * a gang's reservation waiting at most {@code holdTimeout} for its members' binds.
   */
  public SchedulerOptions withKaiDialect(String kaiSchedulerName, Duration holdTimeout) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler,
        nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity,
        staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, placeCpuOnlyPods, grantKeySecret, Optional.of(kaiSchedulerName), holdTimeout, warmUpRounds);
  }

  /** Returns a copy that runs {@code rounds} rounds of the request path before it serves. */
  public SchedulerOptions withWarmUpRounds(int rounds) {
    return new SchedulerOptions(httpBind, certFile, keyFile, extenderBind, clientCaFile, webhookClientCaFile, metricsBind, schedulerName, overwriteDefaultScheduler,
        nodeSchedulerPolicy, gpuSchedulerPolicy, deviceConfigFile, nodeLockTimeout, nodeLockRetryTimeout, leaderElect, leaseName, leaseNamespace, identity,
        staleReservationTimeout, nodeLabelSelector, legacyMetrics, syncTimeout, placeCpuOnlyPods, grantKeySecret, kaiDialect, gangHoldTimeout, rounds);
  }
}
