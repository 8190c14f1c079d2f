package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** Runs policies over seeds on one trace, the seeds in parallel, and collects their reports. */
public final class PlacementBenchmark {
  private PlacementBenchmark() {}

  /**
   * Runs every policy with every seed.
   *
   * @param trace the cluster and workload
   * @param policies policy names, comma-separated
   * @param seeds the seeds
   * @param inflate the target GPU request as a multiple of capacity (the paper's 1.3)
   * @param threads how many runs may go at once
   * @return one report per policy, in the order given
   * @throws BenchInputException on an unknown policy
   */
  public static List<PolicyReport> run(Trace trace, String policies, List<Long> seeds, double inflate, int threads) {
    List<PolicyCatalog.Entry> entries = PolicyCatalog.parse(policies);
    PreparedTrace prepared = PreparedTrace.of(trace);
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, entries.size() * seeds.size())), runnable -> {
      Thread t = new Thread(runnable, "placement-bench");
      t.setDaemon(true);
      return t;
    });
    try {
      List<List<Future<SeedResult>>> futures = new ArrayList<>();
      for (PolicyCatalog.Entry entry : entries) {
        List<Future<SeedResult>> perSeed = new ArrayList<>();
        for (long seed : seeds) {
          perSeed.add(pool.submit(() -> Simulation.run(prepared, entry, inflate, seed)));
        }
        futures.add(perSeed);
      }
      List<PolicyReport> reports = new ArrayList<>();
      for (int i = 0; i < entries.size(); i++) {
        List<SeedResult> results = new ArrayList<>();
        for (Future<SeedResult> f : futures.get(i)) {
          results.add(f.get());
        }
        reports.add(new PolicyReport(entries.get(i).name(), trace.name(), results));
      }
      return reports;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the runs were going", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }
}
