package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The recorder against a real HTTP server that answers each Event only when the test lets it: Events
 * go one at a time and in order, a refusal does not stop the next, and an API server that stops
 * answering costs at most the queue, beyond which Events are dropped.
 */
class EventRecorderTest {
  private static final KubernetesSerialization MODEL = new KubernetesSerialization();
  private static final int QUEUE = 8;

  private final List<Event> received = new CopyOnWriteArrayList<>();
  private final AtomicInteger inFlight = new AtomicInteger();
  private final AtomicInteger mostInFlight = new AtomicInteger();
  /** One permit answers one Event. */
  private final Semaphore answers = new Semaphore(0);
  /** The answer's status for each Event, by its order of arrival (201 past the list's end). */
  private volatile List<Integer> codes = List.of();
  private HttpServer server;
  private KubernetesClient client;
  private EventRecorder recorder;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setExecutor(Executors.newCachedThreadPool());
    server.createContext("/", this::answer);
    server.start();
    String master = "http://127.0.0.1:" + server.getAddress().getPort();
    client = new KubernetesClientBuilder().withConfig(new ConfigBuilder().withMasterUrl(master).withRequestRetryBackoffLimit(0).build()).build();
    recorder = new EventRecorder(client, "vgpu-scheduler", Clock.systemUTC(), QUEUE);
  }

  @AfterEach
  void stop() {
    recorder.close();
    answers.release(10_000);
    client.close();
    server.stop(0);
  }

  private void answer(HttpExchange exchange) throws IOException {
    int now = inFlight.incrementAndGet();
    mostInFlight.accumulateAndGet(now, Math::max);
    int index;
    synchronized (received) {
      index = received.size();
      received.add(MODEL.unmarshal(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8), Event.class));
    }
    try {
      answers.acquire();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    inFlight.decrementAndGet();
    int code = index < codes.size() ? codes.get(index) : 201;
    byte[] body = code == 201 ? "{}".getBytes(StandardCharsets.UTF_8) : "{\"kind\":\"Status\",\"message\":\"refused\"}".getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(code, body.length);
    exchange.getResponseBody().write(body);
    exchange.close();
  }

  private static Pod pod(String name) {
    return new PodBuilder().withNewMetadata().withName(name).withNamespace("team-a").withUid("uid-" + name).endMetadata().build();
  }

  private void awaitReceived(int count) {
    ClusterHarness.await(() -> received.size() >= count, count + " Events at the API server");
  }

  @Test
  void eventsGoOneAtATimeInTheOrderRecorded() throws InterruptedException {
    for (int i = 0; i < 5; i++) {
      recorder.normal(pod("p" + i), "FilteringSucceed", "event " + i);
    }
    awaitReceived(1);
    for (int i = 1; i < 5; i++) {
      // The next Event waits for the last one's answer.
      TimeUnit.MILLISECONDS.sleep(50);
      assertThat(received).hasSize(i);
      answers.release();
      awaitReceived(i + 1);
    }
    answers.release();
    assertThat(received).extracting(Event::getMessage).containsExactly("event 0", "event 1", "event 2", "event 3", "event 4");
    assertThat(received).extracting(e -> e.getInvolvedObject().getName()).containsExactly("p0", "p1", "p2", "p3", "p4");
    assertThat(received).allSatisfy(e -> {
      assertThat(e.getMetadata().getNamespace()).isEqualTo("team-a");
      assertThat(e.getSource().getComponent()).isEqualTo("vgpu-scheduler");
    });
    assertThat(mostInFlight.get()).isEqualTo(1);
  }

  @Test
  void aRefusedEventDoesNotStopTheNext() {
    codes = List.of(403, 500);
    answers.release(10);
    recorder.warning(pod("a"), "BindingFailed", "first");
    recorder.warning(pod("b"), "BindingFailed", "second");
    recorder.normal(pod("c"), "BindingSucceed", "third");
    awaitReceived(3);
    assertThat(received).extracting(Event::getMessage).containsExactly("first", "second", "third");
  }

  @Test
  void anApiServerThatStopsAnsweringCostsTheQueueAndNoMore() throws InterruptedException {
    // One on its way, the queue behind it, and ten more that are dropped.
    for (int i = 0; i < 1 + QUEUE + 10; i++) {
      recorder.normal(pod("p" + i), "FilteringSucceed", "event " + i);
    }
    awaitReceived(1);
    answers.release(10_000);
    awaitReceived(1 + QUEUE);
    TimeUnit.MILLISECONDS.sleep(200);
    assertThat(received).hasSize(1 + QUEUE);
    assertThat(received.get(QUEUE).getMessage()).isEqualTo("event " + QUEUE);
    // Answered again, it takes new Events.
    recorder.normal(pod("late"), "FilteringSucceed", "after");
    awaitReceived(2 + QUEUE);
    assertThat(received.get(1 + QUEUE).getMessage()).isEqualTo("after");
  }

  @Test
  void closingDropsWhatWasNotSent() throws InterruptedException {
    recorder.normal(pod("a"), "FilteringSucceed", "sent");
    recorder.normal(pod("b"), "FilteringSucceed", "waiting");
    awaitReceived(1);
    recorder.close();
    answers.release(10);
    recorder.normal(pod("c"), "FilteringSucceed", "after close");
    TimeUnit.MILLISECONDS.sleep(200);
    assertThat(received).extracting(Event::getMessage).containsExactly("sent");
  }
}
