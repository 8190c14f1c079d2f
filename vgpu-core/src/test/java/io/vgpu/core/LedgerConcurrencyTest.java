package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * The ledger's invariants under concurrent reserve and release from 8 threads: no card ever exceeds
 * its memory, compute or sharing slots, no namespace its quota; contenders for a card's last slot see
 * exactly one winner; releasing everything returns every counter to exactly zero.
 */
class LedgerConcurrencyTest {
  private static final int THREADS = 8;
  private static final String NODE = "n1";
  private static final int CARDS = 3;
  private static final int CARD_MEMORY = 1000;
  private static final int CARD_CORES = 100;
  private static final int SPLIT = 4;
  private static final long QUOTA_MEMORY = 2000;

  /** One pod's grant: a card subset with amounts. */
  record Ask(int pod, int firstCard, int cards, int memory, int cores, boolean teamA) {}

  @Provide
  Arbitrary<List<List<Ask>>> workloads() {
    Arbitrary<Ask> ask =
        Combinators.combine(
                Arbitraries.integers().between(0, 39),
                Arbitraries.integers().between(0, CARDS - 1),
                Arbitraries.integers().between(1, 2),
                Arbitraries.integers().between(0, 600),
                Arbitraries.integers().between(0, 70),
                Arbitraries.of(true, false))
            .as(Ask::new);
    return ask.list().ofMinSize(20).ofMaxSize(60).list().ofSize(THREADS);
  }

  private static Engine ledger() {
    Engine engine = Fixtures.engine();
    List<SchedulableDevice> cards = new ArrayList<>();
    for (int i = 0; i < CARDS; i++) {
      cards.add(new SchedulableDevice("GPU-" + i, i, Fixtures.A100, CARD_MEMORY, CARD_CORES, SPLIT, 0, true, "hami-core"));
    }
    engine.upsertNode(NodeDevices.of(NODE, cards));
    engine.setQuota("team-a", new QuotaLimits(QUOTA_MEMORY, QuotaLimits.UNLIMITED));
    return engine;
  }

  private static PodGrant grantOf(int thread, Ask ask) {
    List<DeviceGrant> devices = new ArrayList<>();
    for (int c = 0; c < ask.cards(); c++) {
      devices.add(new DeviceGrant("GPU-" + ((ask.firstCard() + c) % CARDS), "NVIDIA", ask.memory(), ask.cores()));
    }
    String namespace = ask.teamA() ? "team-a" : "team-b";
    return new PodGrant(new PodRef(namespace, "p" + thread + "-" + ask.pod()), NODE, List.of(), List.of(new ContainerGrant("c", devices)));
  }

  private static void assertWithinCapacity(Engine engine) {
    for (DeviceUsage d : engine.usage(NODE).orElseThrow().devices()) {
      assertThat(d.usedMemoryMiB()).isBetween(0, CARD_MEMORY);
      assertThat(d.usedCores()).isBetween(0, CARD_CORES);
      assertThat(d.sharers()).isBetween(0, SPLIT);
    }
    assertThat(engine.quota("team-a").usedMemoryMiB()).isBetween(0L, QUOTA_MEMORY);
  }

  private static void runConcurrently(List<Runnable> tasks) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> futures = new ArrayList<>();
      for (Runnable task : tasks) {
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  task.run();
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Property(tries = 40)
  void neverOvercommitsAndReleasingEverythingReturnsToZero(@ForAll("workloads") List<List<Ask>> workload) throws Exception {
    Engine engine = ledger();
    ConcurrentLinkedQueue<Throwable> violations = new ConcurrentLinkedQueue<>();
    List<Runnable> tasks = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      List<Ask> asks = workload.get(t);
      tasks.add(
          () -> {
            for (Ask ask : asks) {
              PodGrant grant = grantOf(thread, ask);
              // Alternate: a pod seen for the first time reserves; seen again, it releases.
              if (engine.grant(grant.pod()).isPresent()) {
                engine.release(grant.pod());
              } else {
                engine.reserve(grant);
              }
              try {
                assertWithinCapacity(engine);
              } catch (Throwable e) {
                violations.add(e);
              }
            }
          });
    }
    runConcurrently(tasks);
    assertThat(violations).isEmpty();

    // The ledger's totals equal the sum of the grants it holds.
    int[] memory = new int[CARDS];
    int[] cores = new int[CARDS];
    int[] sharers = new int[CARDS];
    for (PodGrant g : engine.grants()) {
      for (DeviceGrant d : g.containers().get(0).devices()) {
        int card = Integer.parseInt(d.uuid().substring(4));
        memory[card] += d.memoryMiB();
        cores[card] += d.cores();
        sharers[card]++;
      }
    }
    List<DeviceUsage> devices = engine.usage(NODE).orElseThrow().devices();
    for (int c = 0; c < CARDS; c++) {
      assertThat(devices.get(c).usedMemoryMiB()).isEqualTo(memory[c]);
      assertThat(devices.get(c).usedCores()).isEqualTo(cores[c]);
      assertThat(devices.get(c).sharers()).isEqualTo(sharers[c]);
    }

    List<PodGrant> held = engine.grants();
    List<Runnable> releases = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      releases.add(
          () -> {
            for (int i = thread; i < held.size(); i += THREADS) {
              engine.release(held.get(i).pod());
            }
          });
    }
    runConcurrently(releases);
    for (DeviceUsage d : engine.usage(NODE).orElseThrow().devices()) {
      assertThat(d.usedMemoryMiB()).isZero();
      assertThat(d.usedCores()).isZero();
      assertThat(d.sharers()).isZero();
    }
    assertThat(engine.quota("team-a").usedMemoryMiB()).isZero();
    assertThat(engine.quota("team-b").usedMemoryMiB()).isZero();
    assertThat(engine.grants()).isEmpty();
  }

  @Property(tries = 30)
  void contendersForTheLastSlotSeeExactlyOneWinner(@ForAll @IntRange(min = 1, max = 10) int split) throws Exception {
    Engine engine = Fixtures.engine();
    engine.upsertNode(NodeDevices.of(NODE, List.of(new SchedulableDevice("GPU-0", 0, Fixtures.A100, 40960, 100, split, 0, true, "hami-core"))));
    for (int i = 0; i < split - 1; i++) {
      assertThat(engine.reserve(grant("holder" + i)).reserved()).isTrue();
    }
    ConcurrentLinkedQueue<ReserveResult> results = new ConcurrentLinkedQueue<>();
    List<Runnable> tasks = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      tasks.add(() -> results.add(engine.reserve(grant("contender" + thread))));
    }
    runConcurrently(tasks);
    assertThat(results).filteredOn(ReserveResult::reserved).hasSize(1);
    assertThat(results).filteredOn(r -> r.status() == ReserveResult.Status.CONFLICT).hasSize(THREADS - 1);
    assertThat(engine.usage(NODE).orElseThrow().devices().get(0).sharers()).isEqualTo(split);
  }

  private static PodGrant grant(String pod) {
    return new PodGrant(new PodRef("default", pod), NODE, List.of(), List.of(new ContainerGrant("c", List.of(new DeviceGrant("GPU-0", "NVIDIA", 10, 0)))));
  }
}
