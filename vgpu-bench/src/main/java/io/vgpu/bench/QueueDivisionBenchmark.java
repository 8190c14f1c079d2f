package io.vgpu.bench;

import io.vgpu.core.queue.QueueDemand;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceDivision;
import io.vgpu.core.queue.ResourceTerms;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * KAI's fair-share division recomputed from scratch, as its proportion plugin does in every scheduling
 * session: {@code ResourceDivision.divide} over 1,000 queues in a three-level tree (10 departments, 90
 * projects, 900 leaf queues) and the GPU, CPU and memory of 5,000 nodes. The tree is seeded: quotas of
 * which some are -1 (all) or 0, limits of which some are finite, over-quota weights 0 to 4, priorities
 * 50, 100 and 200, and leaf demands that ask for about a quarter more than the cluster has of each
 * resource, so that at every level most siblings divide what is left over quota, in rounds, cut to whole
 * units, with leftovers.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
public class QueueDivisionBenchmark {
  static final int NODES = 5_000;
  static final int DEPARTMENTS = 10;
  static final int PROJECTS_PER_DEPARTMENT = 9;
  static final int LEAVES_PER_PROJECT = 10;
  /** A node's GPUs, millicores and megabytes. */
  static final double NODE_GPUS = 8;
  static final double NODE_MILLICORES = 128_000;
  static final double NODE_MEGABYTES = 1_024_000;
  private static final int[] PRIORITIES = {50, 100, 200};

  private List<QueueSpec> queues = List.of();
  private Map<String, QueueDemand> demands = Map.of();
  private Map<QueueResource, Double> total = Map.of();

  @Setup(Level.Trial)
  public void build() {
    Tree tree = Tree.seeded(42);
    queues = tree.queues();
    demands = tree.demands();
    total = tree.total();
  }

  @Benchmark
  public Map<String, Map<QueueResource, QueueShare>> divide() {
    return ResourceDivision.divide(queues, demands, total);
  }

  /**
   * The benchmark's input.
   *
   * @param queues every queue, parents before their children (the creation order)
   * @param demands each leaf queue's demand
   * @param total the cluster's GPUs, millicores and megabytes
   */
  record Tree(List<QueueSpec> queues, Map<String, QueueDemand> demands, Map<QueueResource, Double> total) {
    /** The tree of 1,000 queues over {@link #NODES} nodes, drawn from {@code seed}. */
    static Tree seeded(long seed) {
      SplittableRandom random = new SplittableRandom(seed);
      Map<QueueResource, Double> total = new EnumMap<>(QueueResource.class);
      total.put(QueueResource.GPU, NODES * NODE_GPUS);
      total.put(QueueResource.CPU, NODES * NODE_MILLICORES);
      total.put(QueueResource.MEMORY, NODES * NODE_MEGABYTES);
      // Nominal shares in GPUs; CPU and memory follow them at the nodes' ratio, each drawn on its own.
      double departmentNominal = NODES * NODE_GPUS / DEPARTMENTS;
      List<QueueSpec> queues = new ArrayList<>();
      Map<String, QueueDemand> demands = new LinkedHashMap<>();
      List<String> projects = new ArrayList<>();
      for (int d = 0; d < DEPARTMENTS; d++) {
        queues.add(queue(random, "dept-" + d, null, departmentNominal, 0.1, 0.0));
      }
      double projectNominal = departmentNominal / PROJECTS_PER_DEPARTMENT;
      for (int d = 0; d < DEPARTMENTS; d++) {
        for (int p = 0; p < PROJECTS_PER_DEPARTMENT; p++) {
          String name = "dept-" + d + "-proj-" + p;
          projects.add(name);
          queues.add(queue(random, name, "dept-" + d, projectNominal, 0.05, 0.05));
        }
      }
      double leafNominal = projectNominal / LEAVES_PER_PROJECT;
      for (String project : projects) {
        for (int l = 0; l < LEAVES_PER_PROJECT; l++) {
          String name = project + "-q-" + l;
          queues.add(queue(random, name, project, leafNominal, 0.1, 0.1));
          demands.put(name, demand(random, leafNominal));
        }
      }
      return new Tree(List.copyOf(queues), Map.copyOf(demands), Map.copyOf(total));
    }

    private static QueueSpec queue(SplittableRandom random, String name, @Nullable String parent, double nominalGpus, double allShare, double zeroShare) {
      Map<QueueResource, ResourceTerms> terms = new EnumMap<>(QueueResource.class);
      terms.put(QueueResource.GPU, terms(random, nominalGpus, allShare, zeroShare));
      terms.put(QueueResource.CPU, terms(random, nominalGpus * NODE_MILLICORES / NODE_GPUS, allShare, zeroShare));
      terms.put(QueueResource.MEMORY, terms(random, nominalGpus * NODE_MEGABYTES / NODE_GPUS, allShare, zeroShare));
      int priority = PRIORITIES[random.nextInt(PRIORITIES.length)];
      return new QueueSpec(name, Optional.ofNullable(parent), priority, terms);
    }

    /**
     * A quota of 40-90 % of the nominal share, -1 (all) or 0 by the given odds; a finite limit of 1.2-3 times
     * the nominal share on three queues in ten; an over-quota weight of 0 to 4.
     */
    private static ResourceTerms terms(SplittableRandom random, double nominal, double allShare, double zeroShare) {
      double draw = random.nextDouble();
      double quota = draw < allShare ? ResourceTerms.ALL : draw < allShare + zeroShare ? 0 : Math.floor(nominal * random.nextDouble(0.4, 0.9));
      double limit = random.nextDouble() < 0.3 ? Math.floor(nominal * random.nextDouble(1.2, 3.0)) : ResourceTerms.UNLIMITED;
      return new ResourceTerms(quota, limit, random.nextInt(5));
    }

    /**
     * A leaf's demand: one in ten idle, the rest asking for 0-3 times the nominal share in half GPUs (so
     * that the cluster is asked for about a quarter more than it has), holding 0-100 % of it.
     */
    private static QueueDemand demand(SplittableRandom random, double nominalGpus) {
      if (random.nextInt(10) == 0) {
        return QueueDemand.NONE;
      }
      double gpus = Math.floor(nominalGpus * random.nextDouble(0, 3.0) * 2) / 2;
      double cpu = Math.floor(gpus * NODE_MILLICORES / NODE_GPUS * random.nextDouble(0.6, 1.4));
      double memory = Math.floor(gpus * NODE_MEGABYTES / NODE_GPUS * random.nextDouble(0.6, 1.4));
      double held = random.nextDouble();
      Map<QueueResource, Double> requested = Map.of(QueueResource.GPU, gpus, QueueResource.CPU, cpu, QueueResource.MEMORY, memory);
      Map<QueueResource, Double> allocated =
          Map.of(QueueResource.GPU, Math.floor(gpus * held * 2) / 2, QueueResource.CPU, Math.floor(cpu * held), QueueResource.MEMORY, Math.floor(memory * held));
      return new QueueDemand(requested, allocated);
    }
  }
}
