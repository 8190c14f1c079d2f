package io.vgpu.bench.placement;

import java.util.List;
import java.util.Locale;

/**
 * Writes reports as a table per policy: each seed, then the median and mean; with as-deployed runs, the
 * policy's as-deployed table follows its oracle table.
 */
final class TextReport {
  private static final int[] CURVE_POINTS = {75, 90, 95, 110, 120, 130};

  private TextReport() {}

  static String of(List<PolicyReport> reports, double inflate) {
    return of(PlacementBenchmark.Reports.oracleOnly(reports), inflate);
  }

  static String of(PlacementBenchmark.Reports reports, double inflate) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < reports.oracle().size(); i++) {
      table(out, reports.oracle().get(i), "", inflate);
      AsDeployedSimulation.Setup setup = reports.setup();
      if (!reports.asDeployed().isEmpty() && setup != null) {
        String sampling = String.format(
            Locale.ROOT, "percentageOfNodesToScore %d%s: %d feasible of %d nodes",
            setup.percentageOfNodesToScore(), setup.percentageOfNodesToScore() == 0 ? " (adaptive)" : "", setup.feasibleNodesToFind(reports.nodes()), reports.nodes());
        table(out, reports.asDeployed().get(i), " as deployed (CPU-only pods: " + setup.cpuOnlyPods().label + "; " + sampling + ")", inflate);
      }
    }
    return out.toString();
  }

  private static void table(StringBuilder out, PolicyReport report, String mode, double inflate) {
    out.append(String.format(
        Locale.ROOT, "%s%s on %s: %d seed(s), inflated to %s x GPU capacity; %% of GPU capacity (frag. rate: %% of idle)%n",
        report.policy(), mode, report.trace(), report.seeds().size(), JsonReport.number(inflate)));
    out.append(String.format(Locale.ROOT, "%-8s %9s", "seed", "unalloc@100"));
    for (int x : CURVE_POINTS) {
      out.append(String.format(Locale.ROOT, " %7s", "@" + x));
    }
    out.append(String.format(Locale.ROOT, " %8s %9s %9s %8s%n", "final", "frag@100", "rate@100", "wall s"));
    for (SeedResult seed : report.seeds()) {
      row(out, Long.toString(seed.seed()), metric -> metric.value().applyAsDouble(seed));
    }
    row(out, "median", metric -> report.median(metric.value()));
    row(out, "mean", metric -> report.mean(metric.value()));
    out.append(System.lineSeparator());
  }

  @FunctionalInterface
  private interface Reading {
    double of(ReportMetric metric);
  }

  private static void row(StringBuilder out, String label, Reading read) {
    out.append(String.format(Locale.ROOT, "%-8s %11s", label, format(read.of(ReportMetric.UNALLOCATED_AT_100))));
    List<ReportMetric> curve = ReportMetric.curve();
    for (int x : CURVE_POINTS) {
      out.append(String.format(Locale.ROOT, " %7s", format(read.of(curve.get(x - ReportMetric.CURVE_FROM)))));
    }
    out.append(String.format(
        Locale.ROOT, " %8s %9s %9s %8s%n",
        format(read.of(ReportMetric.FINAL_ALLOCATION)),
        format(read.of(ReportMetric.FRAGMENTATION_AMOUNT)),
        format(read.of(ReportMetric.FRAGMENTATION_RATE)),
        format(read.of(ReportMetric.WALL_SECONDS))));
  }

  private static String format(double value) {
    return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2f", value);
  }
}
