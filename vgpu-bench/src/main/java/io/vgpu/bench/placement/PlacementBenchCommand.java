package io.vgpu.bench.placement;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code vgpu placement-bench}: replays a node list and a pod list under the FGD paper's protocol for
 * each policy and seed, and reports unallocated GPU share, fragmentation and wall time. Bad input is
 * reported in one line naming the option or {@code file:line}, column and value; the exit code is then
 * 2.
 */
@Command(
    name = PlacementBenchCommand.NAME,
    mixinStandardHelpOptions = true,
    description = {
      "Replays a GPU cluster trace (Alibaba GPU-sharing trace CSV format) under the FGD paper's protocol:",
      "pods shuffled by seed, inflated with clones to --inflate x GPU capacity (or thinned when above it),",
      "submitted once each, never departing; reports unallocated GPU %% at 100%% arrived and the curve.",
      "With --as-deployed, each policy also runs as the deployed scheduler runs it (the engine driven as the",
      "extender drives it, learning online from nothing) and is reported beside its oracle run."
    })
public final class PlacementBenchCommand implements Callable<Integer> {
  /** The subcommand's name. */
  public static final String NAME = "placement-bench";

  /** Exit code for input the user has to fix. */
  public static final int BAD_INPUT = 2;

  @Spec CommandSpec spec;

  @Option(names = "--nodes", paramLabel = "CSV", description = "node list: sn,cpu_milli,memory_mib,gpu,model")
  @Nullable Path nodes;

  @Option(
      names = "--pods",
      paramLabel = "CSV",
      description = "pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]")
  @Nullable Path pods;

  @Option(
      names = "--policy",
      paramLabel = "P[,P...]",
      description = "policies: random, binpack, spread, bestfit, fgd, vgpu")
  @Nullable String policy;

  @Option(names = "--seeds", paramLabel = "FROM..TO", description = "seeds: a range, a comma list or one (default ${DEFAULT-VALUE})", defaultValue = "42..51")
  String seeds = "42..51";

  @Option(names = "--inflate", paramLabel = "RATIO", description = "GPU request to reach, x capacity; 0 keeps the trace as is (default ${DEFAULT-VALUE})", defaultValue = "1.3")
  String inflate = "1.3";

  @Option(names = "--output", paramLabel = "FORMAT", description = "text or json (default ${DEFAULT-VALUE})", defaultValue = "text")
  String output = "text";

  @Option(names = "--plot", paramLabel = "FILE", description = "also write an SVG of unallocated GPU %% against arrived workload")
  @Nullable Path plot;

  @Option(names = "--threads", paramLabel = "N", description = "runs at once (default: the number of cores)")
  @Nullable Integer threads;

  @Option(
      names = "--as-deployed",
      description = "also run each policy as the deployed scheduler does: compile, filter, reserve through the engine, learning online")
  boolean asDeployed;

  @Option(
      names = "--cpu-only-pods",
      paramLabel = "MODE",
      description = "with --as-deployed, who places pods that ask for no GPU: default-scheduler (kube-scheduler's default scores, as deployed) or policy (the pod's policy through the engine, which the deployed extender does not do) (default ${DEFAULT-VALUE})",
      defaultValue = "default-scheduler")
  String cpuOnlyPods = "default-scheduler";

  @Option(
      names = "--percentage-of-nodes-to-score",
      paramLabel = "P",
      description = "with --as-deployed, kube-scheduler's percentageOfNodesToScore, 0 to 100: each scheduling cycle stops once it has found P %% of the nodes feasible (at least 100 nodes; every node below 100), starting after where the last cycle stopped; 0 is kube-scheduler's adaptive share (50 - nodes/125 %%, at least 5 %%); 100 is what the chart deploys (default ${DEFAULT-VALUE})",
      defaultValue = "100")
  String percentageOfNodesToScore = "100";

  /** Runs the command standalone: {@code java -cp benchmarks.jar io.vgpu.bench.placement.PlacementBenchCommand ...}. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new PlacementBenchCommand()).execute(args));
  }

  @Override
  public Integer call() {
    PrintWriter err = spec.commandLine().getErr();
    try {
      run(spec.commandLine().getOut());
      return 0;
    } catch (BenchInputException e) {
      err.println(spec.qualifiedName() + ": " + e.getMessage());
      err.flush();
      return BAD_INPUT;
    }
  }

  private void run(PrintWriter out) {
    Path nodeFile = required(nodes, "--nodes");
    Path podFile = required(pods, "--pods");
    String policies = required(policy, "--policy");
    List<Long> seedList = Seeds.parse(seeds);
    double ratio = inflateRatio();
    boolean json = switch (output.trim().toLowerCase(Locale.ROOT)) {
      case "json" -> true;
      case "text" -> false;
      default -> throw new BenchInputException("--output value '" + output + "' is not a format (known: text, json)");
    };
    int parallelism = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
    if (parallelism < 1) {
      throw new BenchInputException("--threads value '" + parallelism + "' must be at least 1");
    }
    AsDeployedSimulation.CpuOnlyPods mode = AsDeployedSimulation.CpuOnlyPods.parse(cpuOnlyPods);
    if (!asDeployed && spec.commandLine().getParseResult().hasMatchedOption("--cpu-only-pods")) {
      throw new BenchInputException("--cpu-only-pods value '" + cpuOnlyPods + "' needs --as-deployed");
    }
    int percentage = percentageOfNodesToScore();
    if (!asDeployed && spec.commandLine().getParseResult().hasMatchedOption("--percentage-of-nodes-to-score")) {
      throw new BenchInputException("--percentage-of-nodes-to-score value '" + percentageOfNodesToScore + "' needs --as-deployed");
    }
    PolicyCatalog.parse(policies);
    Trace trace = Trace.read(nodeFile, podFile);
    PlacementBenchmark.Reports reports = PlacementBenchmark.run(trace, policies, seedList, ratio, parallelism, asDeployed ? new AsDeployedSimulation.Setup(mode, percentage) : null);
    out.print(json ? JsonReport.of(reports) : TextReport.of(reports, ratio));
    out.flush();
    if (plot != null) {
      List<PolicyReport> lines = new ArrayList<>(reports.oracle());
      for (PolicyReport deployed : reports.asDeployed()) {
        lines.add(new PolicyReport(deployed.policy() + " (as deployed)", deployed.trace(), deployed.seeds()));
      }
      writePlot(plot, SvgPlot.of(lines));
    }
  }

  private double inflateRatio() {
    try {
      double ratio = Double.parseDouble(inflate.trim());
      if (Double.isFinite(ratio) && ratio <= 100) {
        return ratio;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new BenchInputException("--inflate value '" + inflate + "' is not a ratio such as 1.3");
  }

  private int percentageOfNodesToScore() {
    try {
      int percentage = Integer.parseInt(percentageOfNodesToScore.trim());
      if (percentage >= 0 && percentage <= 100) {
        return percentage;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new BenchInputException(
        "--percentage-of-nodes-to-score value '" + percentageOfNodesToScore + "' is not a whole number from 0 to 100 (0: kube-scheduler's adaptive share)");
  }

  private static <T> T required(@Nullable T value, String option) {
    if (value == null || value.toString().isBlank()) {
      throw new BenchInputException(option + " is required");
    }
    return value;
  }

  private static void writePlot(Path file, String svg) {
    try {
      Files.writeString(file, svg, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new BenchInputException("--plot file '" + file + "' cannot be written: " + e.getMessage());
    }
  }
}
