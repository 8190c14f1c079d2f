package io.vgpu.examples.throughput;

import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * An SVG of pods per second against node count: end to end through the scheduler process, and through
 * the engine in-process, on a logarithmic axis (they differ by orders of magnitude).
 */
final class ThroughputPlot {
  private static final int WIDTH = 640;
  private static final int HEIGHT = 400;
  private static final int LEFT = 70;
  private static final int RIGHT = 200;
  private static final int TOP = 40;
  private static final int BOTTOM = 50;

  private ThroughputPlot() {}

  static String svg(List<ThroughputResult> results) {
    double low = Double.MAX_VALUE;
    double high = 1;
    int maxNodes = 1;
    for (ThroughputResult r : results) {
      low = Math.min(low, Math.max(1e-3, Math.min(r.podsPerSecond(), r.enginePodsPerSecond())));
      high = Math.max(high, Math.max(r.podsPerSecond(), r.enginePodsPerSecond()));
      maxNodes = Math.max(maxNodes, r.nodes());
    }
    int fromDecade = (int) Math.floor(Math.log10(Math.min(low, high)));
    int toDecade = Math.max(fromDecade + 1, (int) Math.ceil(Math.log10(high)));
    double plotW = WIDTH - LEFT - RIGHT;
    double plotH = HEIGHT - TOP - BOTTOM;
    int xMax = (int) (Math.ceil(maxNodes / 1000.0) * 1000);
    StringBuilder svg = new StringBuilder();
    svg.append(String.format(Locale.ROOT,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n",
        WIDTH, HEIGHT, WIDTH, HEIGHT));
    svg.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"14\">Pods per second against node count (%d-pod burst)</text>%n",
        LEFT, results.isEmpty() ? 0 : results.get(0).pods()));
    for (int d = fromDecade; d <= toDecade; d++) {
      double y = TOP + plotH - (d - fromDecade) * plotH / (toDecade - fromDecade);
      svg.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", LEFT, y, LEFT + plotW, y));
      svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", LEFT - 6, y + 4, label(Math.pow(10, d))));
    }
    for (int x = 0; x <= xMax; x += Math.max(1000, xMax / 5 / 1000 * 1000)) {
      double px = LEFT + x * plotW / xMax;
      svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", px, TOP, px, TOP + plotH));
      svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>%n", px, TOP + plotH + 18, x));
    }
    svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">GPU nodes (8 cards each)</text>%n", LEFT + plotW / 2, HEIGHT - 8));
    series(svg, results, ThroughputResult::podsPerSecond, "#1f77b4", "vgpu scheduler, end to end", 0, fromDecade, toDecade, xMax);
    series(svg, results, ThroughputResult::enginePodsPerSecond, "#2ca02c", "engine in-process", 1, fromDecade, toDecade, xMax);
    svg.append("</svg>\n");
    return svg.toString();
  }

  private static void series(
      StringBuilder svg, List<ThroughputResult> results, ToDoubleFunction<ThroughputResult> value, String color, String name, int slot, int fromDecade, int toDecade, int xMax) {
    double plotW = WIDTH - LEFT - RIGHT;
    double plotH = HEIGHT - TOP - BOTTOM;
    StringBuilder points = new StringBuilder();
    for (ThroughputResult r : results) {
      double x = LEFT + r.nodes() * plotW / xMax;
      double y = TOP + plotH - (Math.log10(Math.max(value.applyAsDouble(r), 1e-3)) - fromDecade) * plotH / (toDecade - fromDecade);
      points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
      svg.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>%n", x, y, color));
      svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-size=\"11\">%s</text>%n", x + 6, y - 6, color, label(value.applyAsDouble(r))));
    }
    svg.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n", color, points.toString().trim()));
    double ly = TOP + 10 + slot * 20;
    svg.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>%n", LEFT + plotW + 12, ly, LEFT + plotW + 32, ly, color));
    svg.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\">%s</text>%n", LEFT + plotW + 38, ly + 4, name));
  }

  private static String label(double value) {
    if (value >= 1000) {
      return String.format(Locale.ROOT, "%,.0f", value);
    }
    return value >= 10 || value == Math.rint(value) ? String.format(Locale.ROOT, "%.0f", value) : String.format(Locale.ROOT, "%.1f", value);
  }
}
