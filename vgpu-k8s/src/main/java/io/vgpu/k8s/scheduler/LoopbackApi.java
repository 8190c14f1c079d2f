package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.vgpu.k8s.server.HttpService;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A private stand-in for the few API server endpoints the scheduler writes to per pod, on the loopback
 * address, and a client of its own that reaches it through the HTTP client the scheduler's client uses
 * (fabric8's, over OkHttp): the warm-up's writes (the decision patch, the node lock, the Binding, an
 * Event) run the code that the scheduler's writes run, so that the first burst does not compile it.
 *
 * <p>It accepts exactly those writes (and the Events of refused pods), to one made-up pod and node,
 * and keeps nothing: each is answered as an API server answers a success, with the body written echoed
 * back. The client is built from an empty configuration, not the scheduler's: it has no credentials and
 * knows no other server, so nothing the warm-up writes can reach the cluster. The listener answers on
 * 127.0.0.1 from a port the system chooses, for as long as the warm-up runs.
 */
final class LoopbackApi implements AutoCloseable {
  /** The namespace of the pod the warm-up writes to. */
  static final String NAMESPACE = WarmUpObjects.NAMESPACE;
  /** The pod the warm-up's decision patches are sent to. */
  static final String POD = "warm-up-written";
  /** The node the warm-up's lock patches are sent to. */
  static final String NODE = "warm-up-node-00";

  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(5);

  private final HttpService server;
  private final KubernetesClient client;
  private final AtomicInteger writes;

  private LoopbackApi(HttpService server, KubernetesClient client, AtomicInteger writes) {
    this.server = server;
    this.client = client;
    this.writes = writes;
  }

  /** Starts the listener and builds its client. */
  static LoopbackApi start() throws IOException {
    AtomicInteger writes = new AtomicInteger();
    String pods = "/api/v1/namespaces/" + NAMESPACE;
    HttpService server = HttpService.builder(LoopbackExtender.address()).name("warm-up-api").threads(2)
        .route("PATCH", pods + "/pods/" + POD, r -> written(writes, 200, r.body()))
        .route("PATCH", "/api/v1/nodes/" + NODE, r -> written(writes, 200, r.body()))
        .route("POST", pods + "/bindings", r -> written(writes, 201, r.body()))
        .route("POST", pods + "/events", r -> written(writes, 201, r.body()))
        .route("POST", "/api/v1/namespaces/" + WarmUpObjects.REFUSED_NAMESPACE + "/events", r -> written(writes, 201, r.body()))
        .start();
    try {
      Config config = Config.empty();
      config.setMasterUrl("http://" + LoopbackExtender.address().getHostString() + ":" + server.port() + "/");
      config.setRequestTimeout((int) REQUEST_TIMEOUT.toMillis());
      return new LoopbackApi(server, new KubernetesClientBuilder().withConfig(config).build(), writes);
    } catch (RuntimeException e) {
      server.close();
      throw new IOException("the warm-up's API client cannot be built: " + HttpService.oneLine(e.getMessage()), e);
    }
  }

  private static HttpService.Response written(AtomicInteger writes, int status, byte[] body) {
    writes.incrementAndGet();
    return HttpService.Response.json(status, body);
  }

  /** The client whose requests reach this listener only. */
  KubernetesClient client() {
    return client;
  }

  /** How many writes the listener has answered. */
  int writes() {
    return writes.get();
  }

  @Override
  public void close() {
    client.close();
    server.close();
  }
}
