package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * On a restart, informers deliver pods and nodes in any order: a grant restored while its node first
 * registers must be counted exactly once, whichever of the two runs first.
 */
class RestoreRaceTest {
  private static final int ROUNDS = 5_000;
  private static final int PODS = 4;

  private static PodGrant grant(int pod) {
    return new PodGrant(
        new PodRef("default", "p" + pod),
        "n1",
        List.of(),
        List.of(new ContainerGrant("c", List.of(new DeviceGrant(uuid(0, pod % 2), "NVIDIA", 1000, 10)))));
  }

  @Test
  void aGrantRestoredWhileItsNodeRegistersIsCountedOnce() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      int lost = 0;
      for (int round = 0; round < ROUNDS; round++) {
        Engine e = engine();
        CyclicBarrier start = new CyclicBarrier(2);
        Future<?> restores =
            pool.submit(
                () -> {
                  start.await();
                  for (int p = 0; p < PODS; p++) {
                    e.restore(grant(p));
                  }
                  return null;
                });
        Future<?> registration =
            pool.submit(
                () -> {
                  start.await();
                  e.upsertNode(node("n1", 0, 2));
                  return null;
                });
        restores.get(10, TimeUnit.SECONDS);
        registration.get(10, TimeUnit.SECONDS);
        int memory = 0;
        int sharers = 0;
        for (DeviceUsage card : e.usage("n1").orElseThrow().devices()) {
          memory += card.usedMemoryMiB();
          sharers += card.sharers();
        }
        if (memory != PODS * 1000 || sharers != PODS) {
          lost++;
          continue;
        }
        for (int p = 0; p < PODS; p++) {
          e.release(new PodRef("default", "p" + p));
        }
        for (DeviceUsage card : e.usage("n1").orElseThrow().devices()) {
          assertThat(card.usedMemoryMiB()).isZero();
          assertThat(card.usedCores()).isZero();
          assertThat(card.sharers()).isZero();
        }
      }
      assertThat(lost).as("rounds of %d in which a restored grant was not counted", ROUNDS).isZero();
    } finally {
      pool.shutdownNow();
    }
  }
}
