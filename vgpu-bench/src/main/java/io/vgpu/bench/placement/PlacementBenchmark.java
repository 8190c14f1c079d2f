package io.vgpu.bench.placement;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.jspecify.annotations.Nullable;

/** Runs policies over seeds on one trace, the seeds in parallel, and collects their reports. */
public final class PlacementBenchmark {
  private PlacementBenchmark() {}

  /**
   * The reports of one benchmark: the oracle runs ({@link Simulation}, each policy given the trace's
   * whole workload and cluster), and the as-deployed runs ({@link AsDeployedSimulation}, the engine
   * driven as the extender drives it), one per policy and in the same order, or none when not asked.
   *
   * @param oracle one report per policy
   * @param asDeployed one report per policy, or empty
   * @param setup how the as-deployed runs were set up, or null without them
   * @param nodes how many nodes the trace's cluster has
   */
  record Reports(List<PolicyReport> oracle, List<PolicyReport> asDeployed, AsDeployedSimulation.@Nullable Setup setup, int nodes) {
    Reports {
      oracle = List.copyOf(oracle);
      asDeployed = List.copyOf(asDeployed);
    }

    /** Oracle runs only. */
    static Reports oracleOnly(List<PolicyReport> oracle) {
      return new Reports(oracle, List.of(), null, 0);
    }
  }

  /** How one seed of one policy is run. */
  @FunctionalInterface
  private interface Runner {
    SeedResult run(PreparedTrace trace, PolicyCatalog.Entry entry, double inflate, long seed);
  }

  /**
   * Runs every policy with every seed, as the oracle runs them.
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
    return run(trace, policies, seeds, inflate, threads, null).oracle();
  }

  /**
   * Runs every policy with every seed as the oracle runs them and, when {@code asDeployed} is given,
   * also as the deployed scheduler runs them, set up as it says.
   *
   * @throws BenchInputException on an unknown policy
   */
  static Reports run(Trace trace, String policies, List<Long> seeds, double inflate, int threads, AsDeployedSimulation.@Nullable Setup asDeployed) {
    List<PolicyCatalog.Entry> entries = PolicyCatalog.parse(policies);
    PreparedTrace prepared = PreparedTrace.of(trace);
    List<Runner> runners = new ArrayList<>();
    runners.add(Simulation::run);
    if (asDeployed != null) {
      runners.add((t, entry, ratio, seed) -> AsDeployedSimulation.run(t, entry.name(), asDeployed, ratio, seed));
    }
    int runs = runners.size() * entries.size() * seeds.size();
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, runs)), runnable -> {
      Thread t = new Thread(runnable, "placement-bench");
      t.setDaemon(true);
      return t;
    });
    try {
      List<List<List<Future<SeedResult>>>> futures = new ArrayList<>();
      for (Runner runner : runners) {
        List<List<Future<SeedResult>>> perEntry = new ArrayList<>();
        for (PolicyCatalog.Entry entry : entries) {
          List<Future<SeedResult>> perSeed = new ArrayList<>();
          for (long seed : seeds) {
            perSeed.add(pool.submit(() -> runner.run(prepared, entry, inflate, seed)));
          }
          perEntry.add(perSeed);
        }
        futures.add(perEntry);
      }
      List<List<PolicyReport>> reports = new ArrayList<>();
      for (List<List<Future<SeedResult>>> perEntry : futures) {
        List<PolicyReport> out = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
          List<SeedResult> results = new ArrayList<>();
          for (Future<SeedResult> f : perEntry.get(i)) {
            results.add(f.get());
          }
          out.add(new PolicyReport(entries.get(i).name(), trace.name(), results));
        }
        reports.add(out);
      }
      return new Reports(reports.get(0), asDeployed != null ? reports.get(1) : List.of(), asDeployed, trace.nodes().size());
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
