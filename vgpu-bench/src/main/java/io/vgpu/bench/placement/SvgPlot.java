package io.vgpu.bench.placement;

import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Draws unallocated GPU % against arrived workload (75% to 130% of GPU capacity), one line per policy
 * (the median over its seeds), with the ideal scheduler's line for reference, as a self-contained SVG.
 */
final class SvgPlot {
  private static final int WIDTH = 720;
  private static final int HEIGHT = 440;
  private static final int LEFT = 60;
  private static final int RIGHT = 150;
  private static final int TOP = 40;
  private static final int BOTTOM = 50;
  private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

  private SvgPlot() {}

  static String of(List<PolicyReport> reports) {
    int from = ReportMetric.CURVE_FROM;
    int to = SeedResult.LAST_PERCENT;
    double top = 0;
    for (PolicyReport report : reports) {
      for (int x = from; x <= to; x++) {
        top = Math.max(top, median(report, x));
      }
    }
    top = Math.max(5, Math.ceil(Math.max(top, 100 - from) / 5) * 5);
    Scale scale = new Scale(from, to, top);
    StringBuilder svg = new StringBuilder();
    svg.append(String.format(
        Locale.ROOT,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
        WIDTH, HEIGHT, WIDTH, HEIGHT));
    svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    String trace = reports.isEmpty() ? "" : reports.get(0).trace();
    svg.append(String.format(
        Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"14\">Unallocated GPU (%%) vs arrived workload: %s</text>%n", LEFT, escape(trace)));
    axes(svg, scale, from, to, top);
    // The ideal scheduler allocates everything that arrives until the cluster is full.
    svg.append(polyline(scale, from, to, x -> Math.max(0, 100.0 - x), "#999999", "4 3"));
    for (int i = 0; i < reports.size(); i++) {
      PolicyReport report = reports.get(i);
      String color = COLORS[i % COLORS.length];
      svg.append(polyline(scale, from, to, x -> median(report, x), color, null));
      int y = TOP + 16 + 18 * i;
      svg.append(String.format(
          Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>%n",
          WIDTH - RIGHT + 12, y - 4, WIDTH - RIGHT + 36, y - 4, color));
      svg.append(String.format(
          Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", WIDTH - RIGHT + 42, y, escape(report.policy())));
    }
    int y = TOP + 16 + 18 * reports.size();
    svg.append(String.format(
        Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999999\" stroke-dasharray=\"4 3\"/>%n",
        WIDTH - RIGHT + 12, y - 4, WIDTH - RIGHT + 36, y - 4));
    svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">ideal</text>%n", WIDTH - RIGHT + 42, y));
    return svg.append("</svg>\n").toString();
  }

  private static double median(PolicyReport report, int arrivedPercent) {
    return report.median(r -> r.unallocatedAt(arrivedPercent));
  }

  private record Scale(int from, int to, double top) {
    double x(double arrived) {
      return LEFT + (arrived - from) / (to - from) * (WIDTH - LEFT - RIGHT);
    }

    double y(double unallocated) {
      return TOP + (1 - unallocated / top) * (HEIGHT - TOP - BOTTOM);
    }
  }

  private static void axes(StringBuilder svg, Scale scale, int from, int to, double top) {
    for (int x = from + (5 - from % 5) % 5; x <= to; x += 5) {
      double px = scale.x(x);
      svg.append(String.format(
          Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eeeeee\"/>%n", px, TOP, px, HEIGHT - BOTTOM));
      svg.append(String.format(
          Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>%n", px, HEIGHT - BOTTOM + 16, x));
    }
    double step = top <= 10 ? 1 : top <= 30 ? 5 : 10;
    for (double v = 0; v <= top + 1e-9; v += step) {
      double py = scale.y(v);
      svg.append(String.format(
          Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eeeeee\"/>%n", LEFT, py, WIDTH - RIGHT, py));
      svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6, py + 4, JsonReport.number(v)));
    }
    svg.append(String.format(
        Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333333\"/>%n",
        LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM));
    svg.append(String.format(
        Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arrived workload (%% of GPU capacity)</text>%n",
        (LEFT + WIDTH - RIGHT) / 2, HEIGHT - 12));
    svg.append(String.format(
        Locale.ROOT, "<text transform=\"translate(16 %d) rotate(-90)\" text-anchor=\"middle\">unallocated GPU (%%)</text>%n",
        (TOP + HEIGHT - BOTTOM) / 2));
  }

  @FunctionalInterface
  private interface Curve {
    double at(int arrivedPercent);
  }

  private static String polyline(Scale scale, int from, int to, Curve curve, String color, @Nullable String dash) {
    StringBuilder points = new StringBuilder();
    for (int x = from; x <= to; x++) {
      double v = curve.at(x);
      if (!Double.isNaN(v)) {
        points.append(String.format(Locale.ROOT, "%.1f,%.1f ", scale.x(x), scale.y(v)));
      }
    }
    return String.format(
        Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>%n",
        color, dash == null ? "" : " stroke-dasharray=\"" + dash + "\"", points.toString().trim());
  }

  private static String escape(String text) {
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
