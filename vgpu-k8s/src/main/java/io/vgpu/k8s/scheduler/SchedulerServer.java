package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.vgpu.core.Engine;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.grant.GrantKeySecret;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.kai.KaiDialectAdmission;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.server.ClientCertificateAuthority;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderFilterResult;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingResult;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code vgpu scheduler} assembled: the webhook on {@code --http_bind}; the extender there too, or on its
 * own listener ({@code --extender-bind-address}, loopback when kube-scheduler runs in the same pod);
 * metrics and the health probes on a third; the ledger following the cluster; and the leader's periodic
 * work — the node handshake pass every 15 seconds and the sweep that gives back reservations of pods
 * filtered but never bound.
 *
 * <p>With {@code --grant-key-secret} the key that signs grants is read (or made) before anything is
 * served, and every grant the filter writes carries the scheduler's signature.
 *
 * <p>{@code /filter} and {@code /bind} act with the scheduler's rights (they patch pods and post
 * Bindings), so with {@code --client-ca-file} they answer only clients presenting a certificate of
 * that authority — kube-scheduler, through its extender {@code tlsConfig}. Without it the scheduler
 * warns once at start that they are open to any caller. The probes need no certificate.
 */
public final class SchedulerServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SchedulerServer.class);
  private static final JsonMapper JSON =
      PodJson.mapper().rebuild().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();
  private static final Duration REGISTER_INTERVAL = Duration.ofSeconds(15);
  private static final Duration SWEEP_INTERVAL = Duration.ofSeconds(30);
  /** How often gang holds past their deadline are given back (a deadline is seconds to minutes away). */
  private static final Duration GANG_EXPIRY_INTERVAL = Duration.ofSeconds(1);
  /** Threads that finish binds once their node's lock is theirs (a bind waiting for one holds none). */
  private static final int BIND_THREADS = 2;
  /** The longest a warm-up may delay serving, however many rounds it was given. */
  static final Duration WARM_UP_BUDGET = Duration.ofSeconds(20);

  private final KubernetesClient client;
  private final Engine engine;
  private final ClusterLedger ledger;
  private final Leadership leadership;
  private final NodeHealth health;
  private final Extender extender;
  private final HttpService http;
  private final HttpService extenderHttp;
  private final HttpService metricsHttp;
  private final ScheduledExecutorService background;
  private final ExecutorService binds;
  private final EventRecorder events;
  private final @Nullable KaiObjects kai;
  private final @Nullable ExecutorService waking;

  private SchedulerServer(Builder b) {
    this.client = b.client;
    this.engine = b.engine;
    this.ledger = b.ledger;
    this.leadership = b.leadership;
    this.health = b.health;
    this.extender = b.extender;
    this.http = b.http;
    this.extenderHttp = b.extenderHttp;
    this.metricsHttp = b.metricsHttp;
    this.background = b.background;
    this.binds = b.binds;
    this.events = b.events;
    this.kai = b.kai;
    this.waking = b.waking;
  }

  /** The device configuration with the policies the flags name in place of its own. */
  static DeviceConfig effective(SchedulerOptions options, DeviceConfig config) {
    return config.toBuilder()
        .nodeSchedulerPolicy(options.nodeSchedulerPolicy().isEmpty() ? config.nodeSchedulerPolicy() : options.nodeSchedulerPolicy())
        .gpuSchedulerPolicy(options.gpuSchedulerPolicy().isEmpty() ? config.gpuSchedulerPolicy() : options.gpuSchedulerPolicy())
        .build();
  }

  /** The mapper the scheduler reads its requests with. */
  static JsonMapper json() {
    return JSON;
  }

  private static final class Builder {
    KubernetesClient client;
    Engine engine;
    ClusterLedger ledger;
    Leadership leadership;
    NodeHealth health;
    Extender extender;
    HttpService http;
    HttpService extenderHttp;
    HttpService metricsHttp;
    ScheduledExecutorService background;
    ExecutorService binds;
    EventRecorder events;
    @Nullable KaiObjects kai;
    @Nullable DialectPods dialect;
    @Nullable ExecutorService waking;
  }

  /**
   * Starts everything and returns once the ledger has synced and both listeners are up.
   *
   * @param config the device configuration (from {@code --device-config-file} or HAMi's defaults)
   * @throws IOException when a listener cannot bind or the TLS files cannot be read
   */
  public static SchedulerServer start(SchedulerOptions options, DeviceConfig config, KubernetesClient client, Clock clock) throws IOException {
    DeviceConfig effective = effective(options, config);
    // The key first: a scheduler that would sign grants serves nothing until it can.
    GrantSignature signer = null;
    if (options.grantKeySecret().isPresent()) {
      GrantKeySecret secret = GrantKeySecret.parse(client, "--grant-key-secret", options.grantKeySecret().get());
      try {
        signer = new GrantSignature(secret.ensure());
      } catch (IOException e) {
        throw new IOException("--grant-key-secret: " + e.getMessage(), e);
      }
    }
    Builder b = new Builder();
    b.client = client;
    b.engine = Engine.builder().config(effective.engineConfig()).build();
    PrometheusRegistry registry = new PrometheusRegistry();
    String version = SchedulerServer.class.getPackage().getImplementationVersion();
    SchedulerMetrics metrics = new SchedulerMetrics(registry, b.engine, options.legacyMetrics(), version == null ? "dev" : version);
    b.health = new NodeHealth(effective.schema().countResource(), clock, Duration.ofSeconds(60));
    b.events = new EventRecorder(client, "vgpu-scheduler", clock);
    EventRecorder events = b.events;
    if (options.kaiDialect().isPresent()) {
      b.kai = new KaiObjects(client, b.engine, events);
      b.dialect = new DialectPods(options.kaiDialect().get(), b.kai, effective.schema().countResource(), effective.schema().coresResource());
    }
    DialectPods dialectPods = b.dialect;
    b.ledger = new ClusterLedger(client, b.engine, labelFilter(options.nodeLabelSelector()), b.health, events, clock, options.staleReservationTimeout(),
        pod -> dialectPods != null && dialectPods.speaks(pod) ? dialectPods.queueOf(pod) : null);
    ClusterLedger ledger = b.ledger;
    ledger.onPodDeleted(metrics::deleted);
    if (dialectPods != null) {
      registry.register(new QueueMetrics(b.engine, ledger::pods, ledger::nodes, dialectPods::speaks, dialectPods::queueOf));
    }
    b.binds = Executors.newFixedThreadPool(BIND_THREADS, daemon("vgpu-bind"));
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
            new NodeLock(client, options.nodeLockTimeout(), clock, ledger::pod),
            events,
            metrics,
            clock,
            Duration.ofSeconds(25),
            options.nodeLockRetryTimeout(),
            b.binds,
            options.placeCpuOnlyPods(),
            signer,
            b.dialect,
            options.gangHoldTimeout());
    String schedulerName = options.schedulerName().isEmpty() ? AdmissionMutator.DEFAULT_SCHEDULER_NAME : options.schedulerName();
    AdmissionMutator mutator = new AdmissionMutator(effective, schedulerName, options.overwriteDefaultScheduler(), options.placeCpuOnlyPods());
    Engine engine = b.engine;
    Function<Pod, AdmissionResult> decision = pod -> mutator.admit(pod, engine::quota);
    if (options.kaiDialect().isPresent()) {
      // KAI's pods are turned into pods of this scheduler first, then decided on as any vGPU pod.
      KaiDialectAdmission dialect = new KaiDialectAdmission(options.kaiDialect().get(), schedulerName, effective);
      Function<Pod, AdmissionResult> hami = decision;
      decision = pod -> dialect.admit(pod, hami);
    }
    AdmissionWebhook webhook = new AdmissionWebhook(decision, events);

    if (b.kai != null) {
      // Queues first: the ledger charges the grants it restores to them, and PodGroups name their queue.
      try {
        b.kai.start(options.syncTimeout());
      } catch (RuntimeException e) {
        b.kai.close();
        b.binds.shutdownNow();
        b.events.close();
        b.leadership.close();
        throw e;
      }
      b.waking = Executors.newSingleThreadExecutor(daemon("vgpu-kai-wake"));
      WaitingPods waiting = new WaitingPods(client, b.ledger, b.waking);
      b.kai.onChange(waiting::wake);
    }
    metrics.rebuilt(b.ledger.start(options.syncTimeout()).toNanos());
    // A new leader takes over the reservations its predecessor made and kube-scheduler has yet to bind.
    b.leadership.onStartedLeading(b.ledger::adoptReservations);
    Optional<ClientCertificateAuthority> extenderClients = authority("--client-ca-file", options.clientCaFile());
    Optional<ClientCertificateAuthority> webhookClients = authority("--webhook-client-ca-file", options.webhookClientCaFile());
    ReloadingKeyManager keys =
        options.certFile().isPresent() ? new ReloadingKeyManager(options.certFile().get(), options.keyFile().orElseThrow(), Duration.ofSeconds(10), clock) : null;
    int warmUpRounds = WarmUpRounds.forThisJvm(options.warmUpRounds());
    if (warmUpRounds < options.warmUpRounds()) {
      LOG.info("warm-up: {} rounds of the {} asked for, as this JVM compiles without C2", warmUpRounds, options.warmUpRounds());
    }
    if (warmUpRounds > 0) {
      // Before the listeners: kube-scheduler's first calls would otherwise share the CPU with it. Over
      // the loopback, with the extender's certificate, so that Jetty and TLS are warmed too.
      new WarmUp(effective, JSON, client, signer != null).runOverLoopback(warmUpRounds, WARM_UP_BUDGET, keys);
    }
    boolean ownListener = !options.extenderBind().isEmpty();
    HttpService.Builder webhookRoutes = HttpService.builder(HttpService.parseAddress("--http_bind", options.httpBind())).name(ownListener ? "webhook" : "extender");
    HttpService.Builder extenderRoutes =
        ownListener ? HttpService.builder(HttpService.parseAddress("--extender-bind-address", options.extenderBind())).name("extender") : webhookRoutes;
    if (keys != null) {
      webhookRoutes.tls(keys);
      extenderRoutes.tls(keys);
    }
    // The filter's arguments are read with a streaming reader that reuses the previous call's names. A
    // call answered without waiting is answered on the connection's I/O thread, without a hand-off.
    ExtenderArgsReader filterArgs = new ExtenderArgsReader(JSON);
    extenderRoutes.routeInline("POST", "/filter", extenderClients.orElse(null), r -> {
      ExtenderArgs args = readFilterArgs(filterArgs, r.body());
      ExtenderFilterResult now = b.extender.filterAtOnce(args);
      return now != null ? HttpService.Inline.answer(json(now)) : HttpService.Inline.onWorker(later -> json(b.extender.filter(args)));
    });
    // A bind that waits for the filter's decision write is handed to the bind threads from the I/O thread.
    extenderRoutes.routeInline("POST", "/bind", extenderClients.orElse(null), r -> {
      ExtenderBindingArgs args = read(r.body(), ExtenderBindingArgs.class);
      CompletableFuture<ExtenderBindingResult> later = b.extender.bindWithoutWaiting(args, r.clientGone());
      return later != null
          ? HttpService.Inline.answerLater(later.thenApply(SchedulerServer::json))
          : HttpService.Inline.onWorkerAsync(onWorker -> b.extender.bind(args, onWorker.clientGone()).thenApply(SchedulerServer::json));
    });
    // A bind may wait up to --node-lock-retry-timeout without a byte on its connection.
    Duration idle = Duration.ofSeconds(30).compareTo(options.nodeLockRetryTimeout().plusSeconds(5)) >= 0 ? Duration.ofSeconds(30) : options.nodeLockRetryTimeout().plusSeconds(5);
    extenderRoutes.idleTimeout(idle);
    route(webhookRoutes, "POST", "/webhook", webhookClients, r -> HttpService.Response.json(200, webhook.review(r.body())));
    String extenderAddress = ownListener ? options.extenderBind() : options.httpBind();
    if (extenderClients.isEmpty()) {
      LOG.warn("the extender on {} answers /filter and /bind from any caller that reaches it; give --client-ca-file to accept only kube-scheduler's certificate",
          extenderAddress);
    }
    SchedulerServer[] self = new SchedulerServer[1];
    List<HttpService> started = new ArrayList<>();
    try {
      started.add(webhookRoutes.start());
      if (ownListener) {
        started.add(extenderRoutes.start());
      }
      started.add(
          HttpService.builder(HttpService.parseAddress("--metrics-bind-address", options.metricsBind()))
              .name("metrics")
              .threads(2)
              .route("GET", "/metrics", r -> metricsResponse(metrics))
              .route("GET", "/healthz", r -> HttpService.Response.text(200, "ok\n"))
              .route("GET", "/readyz", r -> self[0].ready() ? HttpService.Response.text(200, "ok\n") : HttpService.Response.text(503, self[0].notReadyReason() + "\n"))
              .start());
    } catch (IOException | RuntimeException e) {
      started.forEach(HttpService::close);
      b.ledger.close();
      b.leadership.close();
      b.binds.shutdownNow();
      b.events.close();
      throw e;
    }
    b.http = started.get(0);
    b.extenderHttp = ownListener ? started.get(1) : b.http;
    b.metricsHttp = started.get(started.size() - 1);
    b.background = Executors.newSingleThreadScheduledExecutor(daemon("vgpu-scheduler-maintenance"));
    SchedulerServer server = new SchedulerServer(b);
    self[0] = server;
    b.background.scheduleWithFixedDelay(server::registerPass, 0, REGISTER_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    b.background.scheduleWithFixedDelay(server::sweepStaleReservations, SWEEP_INTERVAL.toMillis(), SWEEP_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    if (b.kai != null) {
      b.background.scheduleWithFixedDelay(server::expireGangHolds, GANG_EXPIRY_INTERVAL.toMillis(), GANG_EXPIRY_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }
    LOG.info("vgpu scheduler listening on {} (webhook), {} (extender) and {} (metrics, /healthz, /readyz)", options.httpBind(), extenderAddress, options.metricsBind());
    return server;
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  private static Optional<ClientCertificateAuthority> authority(String flag, Optional<Path> file) throws IOException {
    return file.isEmpty() ? Optional.empty() : Optional.of(ClientCertificateAuthority.read(flag, file.get()));
  }

  private static void route(
      HttpService.Builder routes, String method, String path, Optional<ClientCertificateAuthority> clients, HttpService.Handler handler) {
    if (clients.isPresent()) {
      routes.route(method, path, clients.get(), handler);
    } else {
      routes.route(method, path, handler);
    }
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

  private static ExtenderArgs readFilterArgs(ExtenderArgsReader reader, byte[] body) throws HttpService.BadRequest {
    if (body.length == 0) {
      throw new HttpService.BadRequest("request body is empty");
    }
    try {
      return reader.read(body);
    } catch (JacksonException e) {
      throw new HttpService.BadRequest("malformed " + ExtenderArgs.class.getSimpleName() + " JSON: " + HttpService.oneLine(e.getOriginalMessage()));
    }
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

  private static HttpService.Response metricsResponse(SchedulerMetrics metrics) {
    return HttpService.Response.streamed(200, PrometheusTextFormatWriter.CONTENT_TYPE, metrics::writeExposition);
  }

  /** The engine behind the extender (for embedding and tests). */
  public Engine engine() {
    return engine;
  }

  /** The port of {@code --http_bind}: the webhook's, and the extender's unless it has its own. */
  public int port() {
    return http.port();
  }

  /** The extender's port. */
  public int extenderPort() {
    return extenderHttp.port();
  }

  /** The ledger following the cluster (for tests). */
  ClusterLedger ledger() {
    return ledger;
  }

  /** The metrics port, which also serves {@code /healthz} and {@code /readyz}. */
  public int metricsPort() {
    return metricsHttp.port();
  }

  /** The extender this server answers with. */
  Extender extender() {
    return extender;
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

  /** The leader gives back reservations of pods filtered but never bound within the timeout. */
  void sweepStaleReservations() {
    if (leadership.isLeader()) {
      ledger.reapStaleReservations();
    }
  }

  /** The leader gives back the reservations of gang members not bound within the gang's hold. */
  void expireGangHolds() {
    if (leadership.isLeader()) {
      try {
        extender.expireGangHolds();
      } catch (RuntimeException e) {
        LOG.warn("expiring gang holds failed: {}", HttpService.oneLine(String.valueOf(e)));
      }
    }
  }

  @Override
  public void close() {
    background.shutdownNow();
    if (waking != null) {
      waking.shutdownNow();
    }
    if (kai != null) {
      kai.close();
    }
    http.close();
    binds.shutdownNow();
    if (extenderHttp != http) {
      extenderHttp.close();
    }
    metricsHttp.close();
    ledger.close();
    leadership.close();
    events.close();
  }
}
