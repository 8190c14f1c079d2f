package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.vgpu.api.PodRef;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@EnableKubernetesMockClient(crud = true)
class NodeLockTest {
  KubernetesMockServer server;
  KubernetesClient client;

  private static final PodRef A = new PodRef("default", "a");
  private static final PodRef B = new PodRef("default", "b");

  @BeforeEach
  void cluster() {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("n1").endMetadata().build()).create();
    for (PodRef p : List.of(A, B)) {
      client.pods().inNamespace(p.namespace()).resource(new PodBuilder().withNewMetadata().withName(p.name()).endMetadata().build()).create();
    }
  }

  private NodeLock lock(Clock clock) {
    return new NodeLock(client, Duration.ofMinutes(5), clock);
  }

  @Test
  void lockIsExclusiveReentrantAndReleasedOnlyByItsOwner() throws Exception {
    Clock clock = Clock.fixed(Instant.parse("2026-11-30T10:00:00Z"), ZoneOffset.UTC);
    NodeLock locks = lock(clock);
    locks.acquire("n1", A);
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations()).containsEntry(NodeLock.ANNOTATION, "2026-11-30T10:00:00Z,default,a");
    locks.acquire("n1", A);
    assertThatThrownBy(() -> locks.acquire("n1", B))
        .isInstanceOf(NodeLock.ContentionException.class)
        .hasMessage("node n1 has been locked within 5m0s: node lock contention")
        // A busy node is routine in a burst: the refusal carries its message and no stack trace.
        .satisfies(e -> assertThat(e.getStackTrace()).isEmpty());
    assertThat(locks.release("n1", B, false)).isFalse();
    assertThat(locks.release("n1", A, false)).isTrue();
    assertThat(client.nodes().withName("n1").get().getMetadata().getAnnotations()).doesNotContainKey(NodeLock.ANNOTATION);
    locks.acquire("n1", B);
  }

  @Test
  void anExpiredLockIsTakenOver() throws Exception {
    lock(Clock.fixed(Instant.parse("2026-11-30T10:00:00Z"), ZoneOffset.UTC)).acquire("n1", A);
    NodeLock later = lock(Clock.fixed(Instant.parse("2026-11-30T10:05:01Z"), ZoneOffset.UTC));
    later.acquire("n1", B);
    assertThat(later.holder("n1").orElseThrow().pod()).isEqualTo(B.name());
  }

  @Test
  void aLockWhoseOwnerIsGoneIsTakenOver() throws Exception {
    NodeLock locks = lock(Clock.systemUTC());
    locks.acquire("n1", A);
    client.pods().inNamespace("default").withName("a").delete();
    locks.acquire("n1", B);
    assertThat(locks.holder("n1").orElseThrow().pod()).isEqualTo(B.name());
  }

  @Test
  void aLockWhoseOwnerFinishedOrIsBeingDeletedIsTakenOver() throws Exception {
    NodeLock locks = lock(Clock.systemUTC());
    locks.acquire("n1", A);
    client.pods().inNamespace("default").withName("a").editStatus(p -> new PodBuilder(p).editOrNewStatus().withPhase("Succeeded").endStatus().build());
    locks.acquire("n1", B);
    assertThat(locks.holder("n1").orElseThrow().pod()).isEqualTo(B.name());
    // A holder the cache sees being deleted holds no lock either, whatever the API server says yet.
    var deleting = new PodBuilder(client.pods().inNamespace("default").withName("b").get()).editMetadata().withDeletionTimestamp("2026-12-01T00:00:00Z").endMetadata().build();
    NodeLock cached = new NodeLock(client, Duration.ofMinutes(5), Clock.systemUTC(), ref -> ref.equals(B) ? java.util.Optional.of(deleting) : java.util.Optional.empty());
    cached.acquire("n1", A);
    assertThat(cached.holder("n1").orElseThrow().pod()).isEqualTo(A.name());
  }

  @Test
  void racingSchedulersHaveExactlyOneWinner() throws Exception {
    int racers = 6;
    List<PodRef> pods = new ArrayList<>();
    for (int i = 0; i < racers; i++) {
      PodRef p = new PodRef("default", "racer" + i);
      client.pods().inNamespace("default").resource(new PodBuilder().withNewMetadata().withName(p.name()).endMetadata().build()).create();
      pods.add(p);
    }
    ExecutorService pool = Executors.newFixedThreadPool(racers);
    ConcurrentLinkedQueue<PodRef> winners = new ConcurrentLinkedQueue<>();
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> futures = new ArrayList<>();
    for (PodRef p : pods) {
      // each racer has its own lock manager, as separate scheduler replicas would
      NodeLock mine = lock(Clock.systemUTC());
      futures.add(pool.submit(() -> {
        start.await();
        try {
          mine.acquire("n1", p);
          winners.add(p);
        } catch (NodeLock.ContentionException expected) {
          // lost the race
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : futures) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(winners).hasSize(1);
    assertThat(lock(Clock.systemUTC()).holder("n1").orElseThrow().pod()).isEqualTo(winners.peek().name());
  }

  @Test
  void goDurationFormat() {
    assertThat(NodeLock.format(Duration.ofMinutes(5))).isEqualTo("5m0s");
    assertThat(NodeLock.format(Duration.ofSeconds(28))).isEqualTo("28s");
  }
}
