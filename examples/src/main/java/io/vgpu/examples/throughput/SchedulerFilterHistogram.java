package io.vgpu.examples.throughput;

import io.vgpu.k8s.cli.UnavailableException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The scheduler's own filter latency, {@code vgpu_filter_duration_seconds} on its metrics port: the time
 * from the filter's arguments read to its answer built, without the HTTPS exchange, the JSON and the
 * waits of kube-scheduler's side that the stand-in's timing includes. Read before and after a burst; the
 * difference of the cumulative buckets gives that burst's percentiles, to a bucket's upper bound.
 */
final class SchedulerFilterHistogram {
  private static final Pattern BUCKET = Pattern.compile("^vgpu_filter_duration_seconds_bucket\\{([^}]*)\\} ([0-9.eE+-]+)$");
  private static final Pattern LE = Pattern.compile("le=\"([^\"]+)\"");

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final URI metrics;

  /** The histogram of the scheduler whose metrics listen on {@code port}. */
  SchedulerFilterHistogram(int port) {
    this.metrics = URI.create("http://127.0.0.1:" + port + "/metrics");
  }

  /** The cumulative counts by upper bound (seconds; +Inf last), summed over the {@code result} label. */
  TreeMap<Double, Double> read() {
    String text;
    try {
      text = http.send(HttpRequest.newBuilder(metrics).timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new UnavailableException("cannot read the scheduler's metrics at " + metrics + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted while reading the scheduler's metrics");
    }
    return buckets(text);
  }

  /** The filter histogram's cumulative buckets in a Prometheus text exposition. */
  static TreeMap<Double, Double> buckets(String exposition) {
    TreeMap<Double, Double> out = new TreeMap<>();
    for (String line : exposition.split("\n")) {
      Matcher m = BUCKET.matcher(line.strip());
      if (!m.matches()) {
        continue;
      }
      Matcher le = LE.matcher(m.group(1));
      if (!le.find()) {
        continue;
      }
      double bound = le.group(1).equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le.group(1));
      out.merge(bound, Double.parseDouble(m.group(2)), Double::sum);
    }
    return out;
  }

  /**
   * The upper bound in milliseconds of the bucket holding the {@code p}th percentile of the calls made
   * between {@code before} and {@code after}; 0 when there were none, infinite past the last bound.
   */
  static double percentileMillis(Map<Double, Double> before, TreeMap<Double, Double> after, double p) {
    double total = after.lastEntry() == null ? 0 : after.lastEntry().getValue() - before.getOrDefault(after.lastKey(), 0.0);
    if (total <= 0) {
      return 0;
    }
    for (Map.Entry<Double, Double> e : after.entrySet()) {
      double count = e.getValue() - before.getOrDefault(e.getKey(), 0.0);
      if (count >= p / 100.0 * total) {
        return e.getKey() * 1000;
      }
    }
    return Double.POSITIVE_INFINITY;
  }
}
