package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vgpu.api.PodGrant;
import io.vgpu.core.Engine;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code vgpu scheduler} assembled: the extender and the webhook on one HTTP(S) listener, metrics on
 * another, the ledger following the cluster, and the leader's periodic work — the node handshake pass
 * every 15 seconds and the sweep that gives back reservations of pods filtered but never bound.
 */
public final class SchedulerServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SchedulerServer.class);
  private static final JsonMapper JSON =
      PodJson.mapper().rebuild().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
  private static final Duration REGISTER_INTERVAL = Duration.ofSeconds(15);
  private static final Duration SWEEP_INTERVAL = Duration.ofSeconds(30);

  private final KubernetesClient client;
  private final Engine engine;
  private final ClusterLedger ledger;
  private final Leadership leadership;
  private final NodeHealth health;
  private final Extender extender;
  private final HttpService http;
  private final HttpService metricsHttp;
  private final ScheduledExecutorService background;
  private final Clock clock;
  private final Duration staleReservationTimeout;

  private SchedulerServer(Builder b) {
    this.client = b.client;
    this.engine = b.engine;
    this.ledger = b.ledger;
    this.leadership = b.leadership;
    this.health = b.health;
    this.extender = b.extender;
    this.http = b.http;
    this.metricsHttp = b.metricsHttp;
    this.background = b.background;
    this.clock = b.clock;
    this.staleReservationTimeout = b.staleReservationTimeout;
  }

  private static final class Builder {
    KubernetesClient client;
    Engine engine;
    ClusterLedger ledger;
    Leadership leadership;
    NodeHealth health;
    Extender extender;
    HttpService http;
    HttpService metricsHttp;
    ScheduledExecutorService background;
    Clock clock;
    Duration staleReservationTimeout;
  }

  /**
   * Starts everything and returns once the ledger has synced and both listeners are up.
   *
   * @param config the device configuration (from {@code --device-config-file} or HAMi's defaults)
   * @throws IOException when a listener cannot bind or the TLS files cannot be read
   */
  public static SchedulerServer start(SchedulerOptions options, DeviceConfig config, KubernetesClient client, Clock clock) throws IOException {
    DeviceConfig effective = config.toBuilder()
        .nodeSchedulerPolicy(options.nodeSchedulerPolicy().isEmpty() ? config.nodeSchedulerPolicy() : options.nodeSchedulerPolicy())
        .gpuSchedulerPolicy(options.gpuSchedulerPolicy().isEmpty() ? config.gpuSchedulerPolicy() : options.gpuSchedulerPolicy())
        .build();
    Builder b = new Builder();
    b.client = client;
    b.clock = clock;
    b.staleReservationTimeout = options.staleReservationTimeout();
    b.engine = Engine.builder().config(effective.engineConfig()).build();
    PrometheusRegistry registry = new PrometheusRegistry();
    String version = SchedulerServer.class.getPackage().getImplementationVersion();
    SchedulerMetrics metrics = new SchedulerMetrics(registry, b.engine, options.legacyMetrics(), version == null ? "dev" : version);
    b.health = new NodeHealth(effective.schema().countResource(), clock, Duration.ofSeconds(60));
    b.ledger = new ClusterLedger(client, b.engine, labelFilter(options.nodeLabelSelector()), b.health);
    b.leadership = options.leaderElect()
        ? new LeaseLeadership(client, options.leaseNamespace(), options.leaseName(), options.identity(), clock)
        : Leadership.always();
    b.extender =
        new Extender(
            client,
            b.engine,
            () -> Engine.builder().config(effective.engineConfig()),
            b.ledger,
            b.leadership,
            new PodRequestParser(effective.schema()),
            new NodeLock(client, options.nodeLockTimeout(), clock),
            new EventRecorder(client, "vgpu-scheduler", clock),
            metrics,
            clock,
            Duration.ofSeconds(25),
            options.nodeLockRetryTimeout());
    String schedulerName = options.schedulerName().isEmpty() ? AdmissionMutator.DEFAULT_SCHEDULER_NAME : options.schedulerName();
    AdmissionWebhook webhook = new AdmissionWebhook(new AdmissionMutator(effective, schedulerName, options.overwriteDefaultScheduler()), b.engine::quota);

    metrics.rebuilt(b.ledger.start(options.syncTimeout()).toNanos());
    HttpService.Builder routes = HttpService.builder(HttpService.parseAddress("--http_bind", options.httpBind())).name("extender");
    if (options.certFile().isPresent()) {
      routes.tls(new ReloadingKeyManager(options.certFile().get(), options.keyFile().orElseThrow(), Duration.ofSeconds(10), clock));
    }
    SchedulerServer[] self = new SchedulerServer[1];
    routes
        .route("POST", "/filter", r -> json(b.extender.filter(read(r.body(), ExtenderArgs.class))))
        .route("POST", "/bind", r -> json(b.extender.bind(read(r.body(), ExtenderBindingArgs.class))))
        .route("POST", "/webhook", r -> HttpService.Response.json(200, webhook.review(r.body())))
        .route("GET", "/healthz", r -> HttpService.Response.text(200, "ok\n"))
        .route("GET", "/readyz", r -> self[0].ready() ? HttpService.Response.text(200, "ok\n") : HttpService.Response.text(503, self[0].notReadyReason() + "\n"));
    b.http = routes.start();
    b.metricsHttp =
        HttpService.builder(HttpService.parseAddress("--metrics-bind-address", options.metricsBind()))
            .name("metrics")
            .threads(2)
            .route("GET", "/metrics", r -> metricsResponse(registry))
            .start();
    b.background =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "vgpu-scheduler-maintenance");
              t.setDaemon(true);
              return t;
            });
    SchedulerServer server = new SchedulerServer(b);
    self[0] = server;
    b.background.scheduleWithFixedDelay(server::registerPass, 0, REGISTER_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    b.background.scheduleWithFixedDelay(server::sweepStaleReservations, SWEEP_INTERVAL.toMillis(), SWEEP_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    LOG.info("vgpu scheduler listening on {} (extender, webhook) and {} (metrics)", options.httpBind(), options.metricsBind());
    return server;
  }

  private static Predicate<Node> labelFilter(Map<String, String> selector) {
    return node -> {
      Map<String, String> labels = node.getMetadata().getLabels();
      for (Map.Entry<String, String> e : selector.entrySet()) {
        if (labels == null || !e.getValue().equals(labels.get(e.getKey()))) {
          return false;
        }
      }
      return true;
    };
  }

  private static <T> T read(byte[] body, Class<T> type) throws HttpService.BadRequest {
    if (body.length == 0) {
      throw new HttpService.BadRequest("request body is empty");
    }
    try {
      return JSON.readValue(body, type);
    } catch (JacksonException e) {
      throw new HttpService.BadRequest("malformed " + type.getSimpleName() + " JSON: " + HttpService.oneLine(e.getOriginalMessage()));
    }
  }

  private static HttpService.Response json(Object value) {
    return HttpService.Response.json(200, JSON.writeValueAsBytes(value));
  }

  private static HttpService.Response metricsResponse(PrometheusRegistry registry) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, registry.scrape());
    return new HttpService.Response(200, PrometheusTextFormatWriter.CONTENT_TYPE, out.toByteArray());
  }

  /** The engine behind the extender (for embedding and tests). */
  public Engine engine() {
    return engine;
  }

  /** The extender's port. */
  public int port() {
    return http.port();
  }

  /** The metrics port. */
  public int metricsPort() {
    return metricsHttp.port();
  }

  /** Ready once the ledger has synced and this instance leads. */
  public boolean ready() {
    return ledger.synced() && leadership.isLeader();
  }

  private String notReadyReason() {
    return !ledger.synced() ? "ledger not synced" : "not the leader";
  }

  /**
   * The leader's node pass: stamps the handshake on nodes that carry none and re-evaluates every
   * node's health, so a node whose device plugin stopped reporting loses its devices.
   */
  void registerPass() {
    if (!leadership.isLeader()) {
      return;
    }
    for (Node node : ledger.nodes()) {
      try {
        health.handshakeToWrite(node).ifPresent(value -> {
          ObjectNode patch = PodJson.mapper().createObjectNode();
          patch.putObject("metadata").putObject("annotations").put(NodeHealth.HANDSHAKE, value);
          client.nodes().withName(node.getMetadata().getName()).patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
        });
        ledger.refreshNode(node);
      } catch (KubernetesClientException e) {
        LOG.warn("node {}: handshake failed: {}", node.getMetadata().getName(), e.getMessage());
      } catch (RuntimeException e) {
        LOG.warn("node {}: register pass failed: {}", node.getMetadata().getName(), HttpService.oneLine(String.valueOf(e)));
      }
    }
  }

  /**
   * Gives back reservations of pods that were filtered but never bound within the timeout (HAMi keeps
   * them until the pod is deleted, which strands capacity when kube-scheduler gives up on a pod).
   */
  void sweepStaleReservations() {
    if (!leadership.isLeader()) {
      return;
    }
    Instant cutoff = clock.instant().minus(staleReservationTimeout);
    for (PodGrant grant : engine.grants()) {
      ledger.pod(grant.pod()).ifPresent(pod -> {
        Map<String, String> annotations = PodRefs.annotations(pod);
        String time = annotations.get(HamiAnnotations.ASSIGNED_TIME);
        boolean bound = pod.getSpec() != null && pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty();
        if (bound || annotations.containsKey(HamiAnnotations.BIND_PHASE) || time == null) {
          return;
        }
        try {
          if (Instant.ofEpochSecond(Long.parseLong(time)).isBefore(cutoff)) {
            LOG.info("pod {} was filtered to {} at {} but never bound: giving its reservation back", grant.pod(), grant.node(), time);
            ledger.reap(grant.pod(), time);
          }
        } catch (NumberFormatException e) {
          LOG.debug("pod {}: unreadable {} '{}'", grant.pod(), HamiAnnotations.ASSIGNED_TIME, time);
        }
      });
    }
  }

  @Override
  public void close() {
    background.shutdownNow();
    http.close();
    metricsHttp.close();
    ledger.close();
    leadership.close();
  }
}
