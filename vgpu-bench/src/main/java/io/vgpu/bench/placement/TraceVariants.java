package io.vgpu.bench.placement;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Predicate;

/**
 * Derives workloads and clusters a policy was not designed on from a trace, seeded, and writes them
 * as CSV files for {@code placement-bench}:
 *
 * <ul>
 *   <li>{@code share70}: 70% of the single whole-GPU pods become sharing pods, their shares drawn from
 *       the trace's sharing pods;
 *   <li>{@code multi25}: 25% of them become 2-, 4- or 8-GPU pods, shaped like the trace's;
 *   <li>{@code spec30}: 30% of GPU pods insist on one or two GPU models, drawn by capacity;
 *   <li>{@code cpu30}: CPU-only pods, drawn from the trace's, added until they are 30% of pods;
 *   <li>{@code half-nodes}: the cluster with every node of 4 or more GPUs split in two halves;
 *   <li>{@code lean-cpu}: the cluster with a quarter less CPU on every node.
 * </ul>
 *
 * <p>Usage: {@code java -cp benchmarks.jar io.vgpu.bench.placement.TraceVariants NODES.csv PODS.csv
 * OUT_DIR [SEED]}. Each variant is a pods file {@code <name>.csv} (against the original nodes) or a
 * nodes file {@code nodes-<name>.csv} (for the original pods).
 */
public final class TraceVariants {
  private TraceVariants() {}

  /** Writes every variant into the output folder. */
  public static void main(String[] args) {
    if (args.length < 3) {
      System.err.println("usage: TraceVariants NODES.csv PODS.csv OUT_DIR [SEED]");
      System.exit(2);
    }
    try {
      Trace trace = Trace.read(Path.of(args[0]), Path.of(args[1]));
      long seed = args.length > 3 ? Long.parseLong(args[3]) : 42;
      Path out = Files.createDirectories(Path.of(args[2]));
      for (Map.Entry<String, List<TracePod>> e : podVariants(trace, seed).entrySet()) {
        writePods(out.resolve(e.getKey() + ".csv"), e.getValue());
      }
      for (Map.Entry<String, List<TraceNode>> e : nodeVariants(trace).entrySet()) {
        writeNodes(out.resolve("nodes-" + e.getKey() + ".csv"), e.getValue());
      }
    } catch (BenchInputException e) {
      System.err.println("TraceVariants: " + e.getMessage());
      System.exit(2);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The workload variants, by name. */
  static Map<String, List<TracePod>> podVariants(Trace trace, long seed) {
    List<TracePod> pods = trace.pods();
    List<TracePod> sharing = pods.stream().filter(p -> p.gpus() == 1 && p.gpuMilli() < TracePod.WHOLE_GPU).toList();
    List<TracePod> multi = pods.stream().filter(p -> p.gpus() > 1).toList();
    List<TracePod> cpuOnly = pods.stream().filter(p -> p.gpus() == 0).toList();
    Map<String, Long> cardsByModel = PreparedTrace.of(trace).cardsByModel();
    List<String> models = cardsByModel.keySet().stream().filter(m -> !m.isEmpty()).sorted().toList();
    List<Long> capacity = models.stream().map(cardsByModel::get).toList();

    Map<String, List<TracePod>> variants = new LinkedHashMap<>();
    variants.put("share70", convert(pods, seed, 0.7, TraceVariants::isWholeSingle, (p, r) -> {
      TracePod s = pick(sharing, r);
      return new TracePod(p.name(), p.cpuMilli(), p.memoryMiB(), 1, s.gpuMilli(), p.gpuSpec());
    }));
    variants.put("multi25", convert(pods, seed, 0.25, TraceVariants::isWholeSingle, (p, r) -> {
      TracePod m = pick(multi, r);
      return new TracePod(p.name(), m.cpuMilli(), m.memoryMiB(), m.gpus(), m.gpuMilli(), p.gpuSpec());
    }));
    variants.put("spec30", convert(pods, seed, 0.3, p -> p.gpus() > 0, (p, r) -> {
      String first = weighted(models, capacity, r);
      List<String> spec = new ArrayList<>(List.of(first));
      if (r.nextBoolean()) {
        String second = weighted(models, capacity, r);
        if (!second.equals(first)) {
          spec.add(second);
        }
      }
      return new TracePod(p.name(), p.cpuMilli(), p.memoryMiB(), p.gpus(), p.gpuMilli(), spec);
    }));
    List<TracePod> cpu = new ArrayList<>(pods);
    SplittableRandom random = new SplittableRandom(seed);
    long cpuCount = cpuOnly.size();
    for (int i = 0; cpuCount < 0.3 * cpu.size() && !cpuOnly.isEmpty(); i++, cpuCount++) {
      TracePod c = pick(cpuOnly, random);
      cpu.add(new TracePod(c.name() + "-cpu-" + i, c.cpuMilli(), c.memoryMiB(), 0, 0, List.of()));
    }
    variants.put("cpu30", cpu);
    return variants;
  }

  /** The cluster variants, by name. */
  static Map<String, List<TraceNode>> nodeVariants(Trace trace) {
    Map<String, List<TraceNode>> variants = new LinkedHashMap<>();
    List<TraceNode> halves = new ArrayList<>();
    for (TraceNode n : trace.nodes()) {
      if (n.gpus() >= 4) {
        for (String half : List.of("-a", "-b")) {
          halves.add(new TraceNode(n.name() + half, n.cpuMilli() / 2, n.memoryMiB() / 2, n.gpus() / 2, n.model()));
        }
      } else {
        halves.add(n);
      }
    }
    variants.put("half-nodes", halves);
    variants.put(
        "lean-cpu",
        trace.nodes().stream().map(n -> new TraceNode(n.name(), n.cpuMilli() * 3 / 4, n.memoryMiB(), n.gpus(), n.model())).toList());
    return variants;
  }

  private static boolean isWholeSingle(TracePod p) {
    return p.gpus() == 1 && p.gpuMilli() == TracePod.WHOLE_GPU;
  }

  /** Replaces a seeded {@code share} of the pods that {@code eligible} accepts. */
  private static List<TracePod> convert(
      List<TracePod> pods, long seed, double share, Predicate<TracePod> eligible, BiFunction<TracePod, SplittableRandom, TracePod> change) {
    SplittableRandom random = new SplittableRandom(seed);
    List<TracePod> out = new ArrayList<>(pods.size());
    for (TracePod p : pods) {
      out.add(eligible.test(p) && random.nextDouble() < share ? change.apply(p, random) : p);
    }
    return out;
  }

  private static TracePod pick(List<TracePod> pods, SplittableRandom random) {
    if (pods.isEmpty()) {
      throw new BenchInputException("the pods file has no pod of a kind this variant draws from");
    }
    return pods.get(random.nextInt(pods.size()));
  }

  private static String weighted(List<String> models, List<Long> weights, SplittableRandom random) {
    long total = weights.stream().mapToLong(Long::longValue).sum();
    long x = random.nextLong(total);
    for (int i = 0; i < models.size(); i++) {
      x -= weights.get(i);
      if (x < 0) {
        return models.get(i);
      }
    }
    return models.get(models.size() - 1);
  }

  private static void writePods(Path file, List<TracePod> pods) throws IOException {
    List<String> lines = new ArrayList<>(List.of("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec"));
    for (TracePod p : pods) {
      lines.add(p.name() + "," + p.cpuMilli() + "," + p.memoryMiB() + "," + p.gpus() + "," + p.gpuMilli() + "," + String.join("|", p.gpuSpec()));
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }

  private static void writeNodes(Path file, List<TraceNode> nodes) throws IOException {
    List<String> lines = new ArrayList<>(List.of("sn,cpu_milli,memory_mib,gpu,model"));
    for (TraceNode n : nodes) {
      lines.add(n.name() + "," + n.cpuMilli() + "," + n.memoryMiB() + "," + n.gpus() + "," + n.model());
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }
}
