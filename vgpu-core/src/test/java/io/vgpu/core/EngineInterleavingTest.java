package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;

/**
 * What an embedding scheduler can do to the engine from 8 threads at once, through its public API
 * only: filter now and reserve the placement later (when it may be stale), release, restore the grants
 * of pods that were already running (as a restarted scheduler does, in whatever order its informers
 * deliver them) and register, re-register (with a device gone missing and back) and remove nodes.
 *
 * <p>After every operation, every card keeps every rule: memory, compute and sharing slots within
 * capacity, a 100-core container alone on its card and no 0-core container on a card whose compute is
 * all taken, nothing on an unhealthy or cordoned card, a namespace within its quota. After every round
 * of operations (the threads meet at a barrier, then run their next operation together), every grant
 * reserved or restored and not released is held and counted exactly once: each card's usage is the
 * sum of the grants on it.
 *
 * <p>Restored grants are what already runs, so the engine counts them unconditionally; as a scheduler
 * waits for its ledger to sync before it filters, a node takes new pods only once its running pods are
 * all restored.
 */
class EngineInterleavingTest {
  private static final int THREADS = 8;
  private static final int OPERATIONS_PER_THREAD = 250;
  private static final int TRIES = 50; // 50 x 8 x 250 = 10^5 operations
  private static final int NODES = 4;
  private static final int CARDS = 3;
  private static final int CARD_MIB = 1000;
  private static final int SPLIT = 4;
  private static final String QUOTA_NAMESPACE = "team";
  private static final long QUOTA_MIB = 2500;

  /** Pod shapes {cards, MiB per card, cores per card}: compute only 0, 30 or 100, so the exclusivity rules are visible in the totals. */
  private static final int[][] SHAPES = {{1, 300, 0}, {1, 300, 30}, {1, 200, 100}, {2, 200, 30}, {1, 600, 0}, {2, 100, 0}, {1, 100, 100}};

  enum Kind {
    FILTER,
    RESERVE,
    RELEASE,
    RESTORE,
    REGISTER,
    REMOVE
  }

  /** One operation of one thread; {@code a} and {@code b} pick its target. */
  record Op(Kind kind, int a, int b) {}

  @Provide
  Arbitrary<List<List<Op>>> scripts() {
    Arbitrary<Kind> kind =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(30, Arbitraries.just(Kind.FILTER)),
            net.jqwik.api.Tuple.of(25, Arbitraries.just(Kind.RESERVE)),
            net.jqwik.api.Tuple.of(15, Arbitraries.just(Kind.RELEASE)),
            net.jqwik.api.Tuple.of(15, Arbitraries.just(Kind.RESTORE)),
            net.jqwik.api.Tuple.of(12, Arbitraries.just(Kind.REGISTER)),
            net.jqwik.api.Tuple.of(3, Arbitraries.just(Kind.REMOVE)));
    Arbitrary<Op> op = Combinators.combine(kind, Arbitraries.integers().between(0, 999), Arbitraries.integers().between(0, 999)).as(Op::new);
    return op.list().ofSize(OPERATIONS_PER_THREAD).list().ofSize(THREADS);
  }

  @Property(tries = TRIES, shrinking = ShrinkingMode.OFF)
  void noCardBreaksARuleAndEveryGrantCountsOnce(@ForAll("scripts") List<List<Op>> scripts, @ForAll long seed) throws Exception {
    new Run(seed).run(scripts);
  }

  /** One try: a fresh engine, the pods already running on its nodes, and what the test expects held. */
  private static final class Run {
    final Engine engine = Fixtures.engine();
    /** Pods running before the engine started, by node: what restores deliver. */
    final List<List<PodGrant>> running = new ArrayList<>();
    final ConcurrentLinkedQueue<PodGrant> toRestore = new ConcurrentLinkedQueue<>();
    final AtomicIntegerArray restored = new AtomicIntegerArray(NODES);
    /** Every grant reserved or restored and not yet released, by pod. */
    final Map<PodRef, PodGrant> expected = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();

    Run(long seed) {
      engine.setQuota(QUOTA_NAMESPACE, new QuotaLimits(QUOTA_MIB, QuotaLimits.UNLIMITED));
      SplittableRandom random = new SplittableRandom(seed);
      List<PodGrant> all = new ArrayList<>();
      for (int n = 0; n < NODES; n++) {
        List<PodGrant> pods = runningPods(n, random);
        running.add(pods);
        all.addAll(pods);
      }
      // Informers deliver pods in any order.
      for (int i = all.size() - 1; i > 0; i--) {
        int j = random.nextInt(i + 1);
        PodGrant t = all.get(i);
        all.set(i, all.get(j));
        all.set(j, t);
      }
      toRestore.addAll(all);
    }

    void run(List<List<Op>> scripts) throws Exception {
      CyclicBarrier round = new CyclicBarrier(THREADS, this::checkCountedOnce);
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      try {
        List<Future<?>> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
          int thread = t;
          threads.add(
              pool.submit(
                  () -> {
                    List<Placement> pending = new ArrayList<>();
                    int pod = 0;
                    for (Op op : scripts.get(thread)) {
                      round.await(30, TimeUnit.SECONDS);
                      try {
                        apply(op, thread, pod++, pending);
                        checkRules();
                      } catch (Throwable e) {
                        failures.add(e);
                      }
                    }
                    return null;
                  }));
        }
        for (Future<?> f : threads) {
          f.get(120, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      checkCountedOnce();
      assertThat(failures).isEmpty();
      for (PodRef pod : List.copyOf(expected.keySet())) {
        assertThat(engine.release(pod)).as("release %s", pod).isTrue();
      }
      for (NodeUsage node : engine.usage()) {
        for (DeviceUsage card : node.devices()) {
          assertThat(card.usedMemoryMiB() + card.usedCores() + card.sharers()).as("%s once everything is released", card.device().uuid()).isZero();
        }
      }
      assertThat(engine.quota(QUOTA_NAMESPACE).usedMemoryMiB()).isZero();
    }

    private void apply(Op op, int thread, int pod, List<Placement> pending) {
      switch (op.kind()) {
        case FILTER -> {
          int[] shape = SHAPES[op.a() % SHAPES.length];
          String namespace = op.b() % 2 == 0 ? QUOTA_NAMESPACE : "free";
          PodRequest request =
              PodRequest.of(new PodRef(namespace, "t" + thread + "-" + pod), List.of(new ContainerRequest("c", shape[0], shape[1], ContainerRequest.UNSET, shape[2])));
          engine.filter(engine.compile(request), syncedNodes(), false).placement().ifPresent(pending::add);
        }
        case RESERVE -> {
          if (!pending.isEmpty()) {
            Placement placement = pending.remove(op.a() % pending.size());
            if (engine.reserve(placement).reserved()) {
              expected.put(placement.grant().pod(), placement.grant());
            }
          }
        }
        case RELEASE -> {
          List<PodRef> held = List.copyOf(expected.keySet());
          if (!held.isEmpty()) {
            PodRef victim = held.get(op.a() % held.size());
            if (engine.release(victim)) {
              expected.remove(victim);
            }
          }
        }
        case RESTORE -> {
          PodGrant grant = toRestore.poll();
          if (grant != null) {
            assertThat(engine.restore(grant).reserved()).as("restore %s", grant.pod()).isTrue();
            expected.put(grant.pod(), grant);
            restored.incrementAndGet(nodeNumber(grant.node()));
          }
        }
        case REGISTER -> engine.upsertNode(node(op.a() % NODES, op.b() % 4 == 0 ? op.b() / 4 % CARDS : -1));
        case REMOVE -> engine.removeNode(nodeName(op.a() % NODES));
      }
    }

    /** Nodes whose running pods are all restored: only those take new pods. */
    private List<String> syncedNodes() {
      List<String> out = new ArrayList<>();
      for (int n = 0; n < NODES; n++) {
        if (restored.get(n) == running.get(n).size()) {
          out.add(nodeName(n));
        }
      }
      return out;
    }

    /** The rules every card keeps at every moment (each node's usage is one atomic snapshot). */
    private void checkRules() {
      for (NodeUsage node : engine.usage()) {
        for (DeviceUsage card : node.devices()) {
          String uuid = card.device().uuid();
          within("memory of " + uuid, card.usedMemoryMiB(), CARD_MIB);
          within("cores of " + uuid, card.usedCores(), 100);
          within("sharers of " + uuid, card.sharers(), SPLIT);
          // Only a 100-core container fills a card (30s reach 90), and it takes the card alone.
          if (card.usedCores() == 100 && card.sharers() != 1) {
            throw new AssertionError(uuid + " is exclusive but has " + card.sharers() + " sharers");
          }
          if ((!card.device().healthy() || card.cordoned()) && card.sharers() != 0) {
            throw new AssertionError(uuid + " is unhealthy or cordoned but has " + card.sharers() + " sharers");
          }
        }
      }
      within("quota of " + QUOTA_NAMESPACE, engine.quota(QUOTA_NAMESPACE).usedMemoryMiB(), QUOTA_MIB);
    }

    private static void within(String what, long value, long max) {
      if (value < 0 || value > max) {
        throw new AssertionError(what + " is " + value + ", outside 0.." + max);
      }
    }

    /** Between rounds: every expected grant is held, and each card's usage is the sum of the grants on it. */
    private void checkCountedOnce() {
      try {
        checkRules();
        Map<PodRef, PodGrant> held = new HashMap<>();
        engine.grants().forEach(g -> held.put(g.pod(), g));
        if (!held.equals(expected)) {
          throw new AssertionError("grants held " + held + " are not the grants reserved or restored " + expected);
        }
        Map<String, int[]> sums = new HashMap<>();
        long quotaMemory = 0;
        for (PodGrant grant : expected.values()) {
          for (ContainerGrant container : grant.containers()) {
            for (DeviceGrant device : container.devices()) {
              int[] sum = sums.computeIfAbsent(grant.node() + "/" + device.uuid(), k -> new int[3]);
              sum[0] += device.memoryMiB();
              sum[1] += device.cores();
              sum[2]++;
              if (grant.pod().namespace().equals(QUOTA_NAMESPACE)) {
                quotaMemory += device.memoryMiB();
              }
            }
          }
        }
        for (NodeUsage node : engine.usage()) {
          for (DeviceUsage card : node.devices()) {
            int[] sum = sums.getOrDefault(node.node() + "/" + card.device().uuid(), new int[3]);
            int[] used = {card.usedMemoryMiB(), card.usedCores(), card.sharers()};
            if (!Arrays.equals(used, sum)) {
              throw new AssertionError(
                  "usage of " + card.device().uuid() + " on " + node.node() + " (MiB, cores, sharers) is " + Arrays.toString(used)
                      + ", the grants on it sum to " + Arrays.toString(sum));
            }
          }
        }
        long quotaUsed = engine.quota(QUOTA_NAMESPACE).usedMemoryMiB();
        if (quotaUsed != quotaMemory) {
          throw new AssertionError("quota used " + quotaUsed + " MiB, grants in " + QUOTA_NAMESPACE + " sum to " + quotaMemory);
        }
      } catch (Throwable e) {
        failures.add(e);
      }
    }
  }

  /**
   * Pods already running on node {@code n}: placed one by one through a scratch engine (so together
   * they keep every rule) until one does not fit.
   */
  private static List<PodGrant> runningPods(int n, SplittableRandom random) {
    Engine scratch = Fixtures.engine();
    scratch.upsertNode(node(n, -1));
    List<PodGrant> out = new ArrayList<>();
    for (int p = 0; p < 8; p++) {
      int[] shape = SHAPES[random.nextInt(SHAPES.length)];
      PodRequest request =
          PodRequest.of(new PodRef("running", nodeName(n) + "-" + p), List.of(new ContainerRequest("c", shape[0], shape[1], ContainerRequest.UNSET, shape[2])));
      FilterResult result = scratch.filter(scratch.compile(request), null, false);
      if (result.placement().isEmpty() || !scratch.reserve(result.placement().get()).reserved()) {
        break;
      }
      out.add(result.placement().get().grant());
    }
    return out;
  }

  private static String nodeName(int n) {
    return "n" + n;
  }

  private static int nodeNumber(String name) {
    return Integer.parseInt(name.substring(1));
  }

  /**
   * Node {@code n}: card 2 of node 0 is unhealthy and card 2 of node 1 cordoned, on every registration;
   * {@code missing} names a card left out of this registration (-1: none).
   */
  private static NodeDevices node(int n, int missing) {
    List<SchedulableDevice> cards = new ArrayList<>();
    for (int i = 0; i < CARDS; i++) {
      if (i != missing) {
        cards.add(new SchedulableDevice(Fixtures.uuid(n, i), i, Fixtures.A100, CARD_MIB, 100, SPLIT, i % 2, !(n == 0 && i == 2), "hami-core"));
      }
    }
    Set<String> cordoned = new HashSet<>();
    if (n == 1) {
      cordoned.add(Fixtures.uuid(1, 2));
    }
    return new NodeDevices(nodeName(n), cards, cordoned);
  }
}
