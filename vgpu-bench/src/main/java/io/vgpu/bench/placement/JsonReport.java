package io.vgpu.bench.placement;

import io.vgpu.k8s.codec.GoJsonStrings;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * Writes reports as JSON: one policy gives an object, several an array of them. Each object is
 * {@code {"policy", "trace", "seeds": [...], "median": {...}, "mean": {...}}}; a seed entry has {@code
 * seed}, {@code unallocatedAt100}, {@code finalAllocation}, {@code curve} (unallocated % by arrived %,
 * keys "75" to "130"), {@code fragmentationAmountAt100}, {@code fragmentationRateAt100} and {@code
 * wallSeconds}; median and mean have the same keys but the seed. With as-deployed runs, each object
 * also has {@code "asDeployed": {"cpuOnlyPods", "percentageOfNodesToScore", "feasibleNodesToFind",
 * "seeds", "median", "mean"}}: who placed the CPU-only pods, kube-scheduler's percentage of nodes to
 * score (0: its adaptive share) and how many feasible nodes that makes each cycle stop at, then the
 * same members for the policy as deployed. Percentages are plain numbers (4.77 means 4.77 %); a value
 * without data is {@code null}.
 */
final class JsonReport {
  private JsonReport() {}

  /** Reads a metric: from one seed, or as the median or mean over seeds. */
  @FunctionalInterface
  private interface Reading {
    double of(ToDoubleFunction<SeedResult> metric);
  }

  static String of(List<PolicyReport> reports) {
    return of(PlacementBenchmark.Reports.oracleOnly(reports));
  }

  static String of(PlacementBenchmark.Reports reports) {
    List<PolicyReport> oracle = reports.oracle();
    StringBuilder out = new StringBuilder();
    if (oracle.size() == 1) {
      object(out, reports, 0, "");
    } else {
      out.append("[\n");
      for (int i = 0; i < oracle.size(); i++) {
        out.append("  ");
        object(out, reports, i, "  ");
        out.append(i + 1 < oracle.size() ? ",\n" : "\n");
      }
      out.append(']');
    }
    return out.append('\n').toString();
  }

  private static void object(StringBuilder out, PlacementBenchmark.Reports reports, int i, String indent) {
    PolicyReport report = reports.oracle().get(i);
    String in = indent + "  ";
    out.append("{\n");
    out.append(in).append("\"policy\": ").append(GoJsonStrings.quote(report.policy())).append(",\n");
    out.append(in).append("\"trace\": ").append(GoJsonStrings.quote(report.trace())).append(",\n");
    runs(out, report, in);
    AsDeployedSimulation.Setup setup = reports.setup();
    if (!reports.asDeployed().isEmpty() && setup != null) {
      out.append(",\n").append(in).append("\"asDeployed\": {\n");
      out.append(in).append("  \"cpuOnlyPods\": ").append(GoJsonStrings.quote(setup.cpuOnlyPods().label)).append(",\n");
      out.append(in).append("  \"percentageOfNodesToScore\": ").append(setup.percentageOfNodesToScore()).append(",\n");
      out.append(in).append("  \"feasibleNodesToFind\": ").append(setup.feasibleNodesToFind(reports.nodes())).append(",\n");
      runs(out, reports.asDeployed().get(i), in + "  ");
      out.append('\n').append(in).append('}');
    }
    out.append('\n').append(indent).append('}');
  }

  /** The members {@code seeds}, {@code median} and {@code mean} of one policy's runs, without a final newline. */
  private static void runs(StringBuilder out, PolicyReport report, String in) {
    out.append(in).append("\"seeds\": [");
    List<SeedResult> seeds = report.seeds();
    for (int i = 0; i < seeds.size(); i++) {
      SeedResult seed = seeds.get(i);
      out.append(i == 0 ? "\n" : ",\n").append(in).append("  {\"seed\": ").append(seed.seed()).append(", ");
      metrics(out, metric -> metric.applyAsDouble(seed));
      out.append('}');
    }
    out.append('\n').append(in).append("],\n");
    out.append(in).append("\"median\": {");
    metrics(out, report::median);
    out.append("},\n");
    out.append(in).append("\"mean\": {");
    metrics(out, report::mean);
    out.append('}');
  }

  /** The metrics of one seed, or their median or mean, as JSON members. */
  private static void metrics(StringBuilder out, Reading read) {
    member(out, ReportMetric.UNALLOCATED_AT_100, read).append(", ");
    member(out, ReportMetric.FINAL_ALLOCATION, read).append(", ");
    out.append("\"curve\": {");
    List<ReportMetric> curve = ReportMetric.curve();
    for (int i = 0; i < curve.size(); i++) {
      member(out, curve.get(i), read).append(i + 1 < curve.size() ? ", " : "");
    }
    out.append("}, ");
    member(out, ReportMetric.FRAGMENTATION_AMOUNT, read).append(", ");
    member(out, ReportMetric.FRAGMENTATION_RATE, read).append(", ");
    member(out, ReportMetric.WALL_SECONDS, read);
  }

  private static StringBuilder member(
      StringBuilder out, ReportMetric metric, Reading read) {
    return out.append(GoJsonStrings.quote(metric.name())).append(": ").append(number(read.of(metric.value())));
  }

  /** A number with at most three decimals and no trailing zeros, or null for NaN. */
  static String number(double value) {
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return "null";
    }
    BigDecimal rounded = new BigDecimal(value).setScale(3, RoundingMode.HALF_EVEN).stripTrailingZeros();
    return rounded.scale() < 0 ? rounded.setScale(0).toPlainString() : rounded.toPlainString();
  }
}
