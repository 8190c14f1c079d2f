package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.k8s.kai.KaiPodMutation;
import io.vgpu.k8s.server.ClientCertificateAuthority;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.nvidia.HookLayout;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code vgpu scheduler --stack kai} assembled: under KAI Scheduler, which schedules and shares the cards,
 * vgpu serves only its admission webhook ({@link KaiPodMutation} on {@code --http_bind}, TLS as in the
 * HAMi stack) and the probes on {@code --metrics-bind-address}. No extender, no ledger, no informers, no
 * leadership: the webhook decides from the pod alone, so every replica answers and each is ready as soon
 * as its listeners are up.
 */
public final class KaiWebhookServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KaiWebhookServer.class);

  private final HttpService webhook;
  private final HttpService probes;
  private final EventRecorder events;

  private KaiWebhookServer(HttpService webhook, HttpService probes, EventRecorder events) {
    this.webhook = webhook;
    this.probes = probes;
    this.events = events;
  }

  /**
   * Starts the webhook and the probes.
   *
   * @param options the binds and TLS files ({@code --http_bind}, {@code --cert_file}, {@code --key_file},
   *     {@code --webhook-client-ca-file}, {@code --metrics-bind-address}); the extender's are not used
   * @param layout where the node agent installs the interposer ({@code --hook-path})
   * @param client the API the denial Events are written to
   * @throws IOException when a listener cannot bind or the TLS files cannot be read
   */
  public static KaiWebhookServer start(SchedulerOptions options, HookLayout layout, KubernetesClient client, Clock clock) throws IOException {
    Optional<ClientCertificateAuthority> webhookClients = options.webhookClientCaFile().isEmpty()
        ? Optional.empty()
        : Optional.of(ClientCertificateAuthority.read("--webhook-client-ca-file", options.webhookClientCaFile().get()));
    EventRecorder events = new EventRecorder(client, "vgpu-scheduler", clock);
    AdmissionWebhook admission = new AdmissionWebhook(new KaiPodMutation(layout)::admit, events);
    HttpService.Builder routes = HttpService.builder(HttpService.parseAddress("--http_bind", options.httpBind())).name("webhook");
    if (options.certFile().isPresent()) {
      routes.tls(new ReloadingKeyManager(options.certFile().get(), options.keyFile().orElseThrow(), Duration.ofSeconds(10), clock));
    }
    HttpService.Handler review = r -> HttpService.Response.json(200, admission.review(r.body()));
    if (webhookClients.isPresent()) {
      routes.route("POST", "/webhook", webhookClients.get(), review);
    } else {
      routes.route("POST", "/webhook", review);
    }
    List<HttpService> started = new ArrayList<>();
    try {
      started.add(routes.start());
      started.add(
          HttpService.builder(HttpService.parseAddress("--metrics-bind-address", options.metricsBind()))
              .name("metrics")
              .threads(2)
              .route("GET", "/healthz", r -> HttpService.Response.text(200, "ok\n"))
              // The webhook listener is up before this one starts: nothing else gates readiness.
              .route("GET", "/readyz", r -> HttpService.Response.text(200, "ok\n"))
              .start());
    } catch (IOException | RuntimeException e) {
      started.forEach(HttpService::close);
      events.close();
      throw e;
    }
    LOG.info("vgpu scheduler (stack kai) serving the webhook on {} for pods KAI shares (hook path {}), probes on {}",
        options.httpBind(), layout.hookPath(), options.metricsBind());
    return new KaiWebhookServer(started.get(0), started.get(1), events);
  }

  /** The webhook's port ({@code --http_bind}). */
  public int port() {
    return webhook.port();
  }

  /** The port of {@code /healthz} and {@code /readyz}. */
  public int metricsPort() {
    return probes.port();
  }

  @Override
  public void close() {
    webhook.close();
    probes.close();
    events.close();
  }
}
