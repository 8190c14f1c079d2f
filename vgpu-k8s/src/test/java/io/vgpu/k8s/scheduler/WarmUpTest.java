package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import io.vgpu.k8s.server.ReloadingKeyManager;
import io.vgpu.k8s.server.TestCertificates;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

class WarmUpTest {
  private static final JsonMapper JSON = PodJson.mapper().rebuild().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES).build();

  @Test
  void everyRoundButTheRefusedPlacesAndBindsItsPodAndTheEngineGivesAllBackAtTheEnd() {
    WarmUp warmUp = new WarmUp(DeviceConfig.DEFAULT, JSON, null);
    WarmUp.Outcome outcome = warmUp.run(300, Duration.ofMinutes(1));

    // 300 pods of up to two cards on 16 nodes of 8: they fit because the engine holds at most 128 of
    // them, giving the older half back. One in ten asks for more memory than a card holds, and is refused.
    assertThat(outcome.rounds()).isEqualTo(300);
    assertThat(outcome.placed()).isEqualTo(270);
    assertThat(outcome.apiReads()).isZero();
    assertThat(outcome.signed()).isZero();
    assertThat(warmUp.podsHeld()).isZero();
  }

  @Test
  void aWarmUpForASchedulerThatSignsGrantsSignsEveryDecisionItWrites() {
    // The scheduler's signing is then compiled with the rest of the path, not left for the first pod.
    WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, null, true).run(100, Duration.ofMinutes(1));

    assertThat(outcome.placed()).isEqualTo(90);
    assertThat(outcome.signed()).isEqualTo(90);
  }

  @Test
  void overTheLoopbackEveryRoundGoesThroughTheListenerWithTheSchedulersCertificate(@TempDir Path dir) throws Exception {
    ReloadingKeyManager keys = TestCertificates.keyManager(dir, "vgpu-scheduler", TestCertificates.KeyFormat.PKCS1_RSA);

    WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, null).runOverLoopback(300, Duration.ofMinutes(1), keys);

    assertThat(outcome.overLoopback()).isTrue();
    assertThat(outcome.rounds()).isEqualTo(300);
    assertThat(outcome.placed()).isEqualTo(270);
    // Every round writes (on a JVM without an AOT cache, as here): each placed pod's decision patch,
    // node lock and Binding reached the private API listener, and its FilteringSucceed Event or the
    // refused pods' FilteringFailed ones too, unless the recorder's queue still held them at the end.
    assertThat(outcome.writes()).isBetween(3 * 270, 4 * 270 + 30);
  }

  @Test
  void overTheLoopbackAPrivateLedgerFollowsTheRoundsPodsThroughItsWatchesAndHoldsNoneAfterwards(@TempDir Path dir) throws Exception {
    ReloadingKeyManager keys = TestCertificates.keyManager(dir, "vgpu-scheduler", TestCertificates.KeyFormat.PKCS1_RSA);
    WarmUp warmUp = new WarmUp(DeviceConfig.DEFAULT, JSON, null);

    WarmUp.Outcome outcome = warmUp.runOverLoopback(100, Duration.ofMinutes(1), keys);

    // Each placed pod is seen added, decided, bound, running and deleted; one in four (the 25 rounds
    // divisible by four, none refused) is also seen marked for deletion first; each refused one is seen
    // added only. Every event was received over the WebSocket watch of the API listener (TLS) and
    // handled by the ledger's informer.
    assertThat(outcome.podEvents()).isEqualTo(25 * 6 + 65 * 5 + 10);
    // The ledger found the filter's reservations its own, so it reported no grant it ignored: the
    // writes are the rounds' only (at most four per placed round and one per refused one, as above).
    assertThat(outcome.writes()).isBetween(3 * 90, 4 * 90 + 10);
    assertThat(warmUp.podsHeld()).isZero();
  }

  @Test
  void overTheLoopbackNothingIsWrittenToTheSchedulersApiServer() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    HttpServer server = apiServer(seen);
    try (KubernetesClient client = client("http://127.0.0.1:" + server.getAddress().getPort())) {
      WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, client).runOverLoopback(100, Duration.ofMinutes(1), null);

      assertThat(outcome.writes()).isGreaterThanOrEqualTo(3 * 90);
      // The writes went to the warm-up's own listener; the scheduler's API server was only read.
      assertThat(seen).hasSize(10).containsOnly("GET /version");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void inProcessTheRoundsDoNotGoOverTheLoopback() {
    WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, null).run(10, Duration.ofMinutes(1));

    assertThat(outcome.overLoopback()).isFalse();
    assertThat(outcome.writes()).isZero();
  }

  @Test
  void theBudgetEndsItWhateverTheRounds() {
    WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, null).run(Integer.MAX_VALUE, Duration.ofMillis(200));

    assertThat(outcome.rounds()).isPositive().isLessThan(Integer.MAX_VALUE);
    assertThat(outcome.placed()).isEqualTo(outcome.rounds() - outcome.rounds() / 10);
  }

  @Test
  void oneRoundInTenReadsTheApiServersVersionThroughTheClient() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    HttpServer server = apiServer(seen);
    try (KubernetesClient client = client("http://127.0.0.1:" + server.getAddress().getPort())) {
      WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, client).run(100, Duration.ofMinutes(1));

      assertThat(outcome.rounds()).isEqualTo(100);
      assertThat(outcome.apiReads()).isEqualTo(10);
      assertThat(seen).hasSize(10).containsOnly("GET /version");
    } finally {
      server.stop(0);
    }
  }

  @Test
  void anApiServerThatCannotBeReachedEndsTheReadsNotTheRounds() throws Exception {
    int closed;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closed = socket.getLocalPort();
    }
    try (KubernetesClient client = client("http://127.0.0.1:" + closed)) {
      WarmUp.Outcome outcome = new WarmUp(DeviceConfig.DEFAULT, JSON, client).run(50, Duration.ofMinutes(1));

      assertThat(outcome.rounds()).isEqualTo(50);
      assertThat(outcome.placed()).isEqualTo(45);
      assertThat(outcome.apiReads()).isZero();
    }
  }

  /** An API server that answers every request with a version and notes each in {@code seen}. */
  private static HttpServer apiServer(List<String> seen) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      seen.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
      byte[] body = "{\"major\":\"1\",\"minor\":\"31\"}".getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    return server;
  }

  private static KubernetesClient client(String master) {
    return new KubernetesClientBuilder()
        .withConfig(new ConfigBuilder().withMasterUrl(master).withRequestRetryBackoffLimit(0).withConnectionTimeout(2_000).build())
        .build();
  }
}
