package io.vgpu.examples.throughput;

import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.simulate.TextTable;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** The benchmark's results as text (a table, the audit) or JSON (one object per cluster size). */
final class ThroughputReport {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private ThroughputReport() {}

  /** One object for one run, an array for several. */
  static String json(List<ThroughputResult> results) {
    if (results.size() == 1) {
      return SimulationJson.pretty(object(results.get(0)));
    }
    ArrayNode array = JSON.createArrayNode();
    results.forEach(r -> array.add(object(r)));
    return SimulationJson.pretty(array);
  }

  static ObjectNode object(ThroughputResult r) {
    ObjectNode o = JSON.createObjectNode();
    o.put("nodes", r.nodes());
    o.put("pods", r.pods());
    o.put("running", r.running());
    o.put("podsPerSecond", r.podsPerSecond());
    o.put("schedulerCpuMsPerPod", r.schedulerCpuMsPerPod());
    o.put("schedulerJitCpuMsPerPod", r.schedulerJitCpuMsPerPod());
    o.put("standInCpuMsPerPod", r.standInCpuMsPerPod());
    o.put("standInJitCpuMsPerPod", r.standInJitCpuMsPerPod());
    o.put("filterP50Ms", r.filterP50Ms());
    o.put("filterP99Ms", r.filterP99Ms());
    o.put("bindP50Ms", r.bindP50Ms());
    o.put("bindP99Ms", r.bindP99Ms());
    o.put("heapMiB", r.heapMiB());
    o.put("residentMiB", r.residentMiB());
    o.put("enginePodsPerSecond", r.enginePodsPerSecond());
    o.put("burstSeconds", r.burstSeconds());
    o.put("bindsInFlight", r.bindsInFlight());
    o.put("placed", r.audit().placed());
    o.put("binds", r.successfulBinds());
    o.put("lost", r.audit().lostCount());
    o.put("overbookedCards", r.audit().overbookedCount());
    ArrayNode problems = o.putArray("problems");
    r.audit().lost().forEach(problems::add);
    r.audit().overbooked().forEach(problems::add);
    ObjectNode rejections = o.putObject("bindRejections");
    r.bindRejections().forEach(rejections::put);
    o.put("filterMisses", r.filterMisses());
    // Past the histogram's last bound (30 s) a percentile has no number: null.
    putOrNull(o, "inSchedulerFilterP50Ms", finite(r.inSchedulerFilterP50Ms()));
    putOrNull(o, "inSchedulerFilterP99Ms", finite(r.inSchedulerFilterP99Ms()));
    o.put("setupSeconds", r.setupSeconds());
    o.put("standInsPodsBefore", r.standInsPodsBefore());
    o.put("schedulerJavaVersion", r.schedulerJavaVersion());
    // null: the scheduler started without an AOT cache.
    putOrNull(o, "schedulerAotTrainingSeconds", r.schedulerAotTrainingSeconds().orElse(null));
    ArrayNode load = o.putArray("loadAverage");
    r.loadAverage().forEach(load::add);
    // The steady state: null figures (and why) when the cluster could not hold a second burst.
    ThroughputResult.Steady steady = r.steady().orElse(null);
    o.put("steadyPods", steady == null ? 0 : steady.pods());
    o.put("steadyWarmupPods", steady == null ? 0 : steady.warmupPods());
    putOrNull(o, "schedulerCpuMsPerPodSteady", steady == null ? null : steady.schedulerCpuMsPerPod());
    putOrNull(o, "schedulerJitCpuMsPerPodSteady", steady == null ? null : steady.schedulerJitCpuMsPerPod());
    putOrNull(o, "standInCpuMsPerPodSteady", steady == null ? null : steady.standInCpuMsPerPod());
    putOrNull(o, "standInJitCpuMsPerPodSteady", steady == null ? null : steady.standInJitCpuMsPerPod());
    putOrNull(o, "filterP50MsSteady", steady == null ? null : steady.filterP50Ms());
    putOrNull(o, "filterP99MsSteady", steady == null ? null : steady.filterP99Ms());
    putOrNull(o, "bindP99MsSteady", steady == null ? null : steady.bindP99Ms());
    putOrNull(o, "inSchedulerFilterP99MsSteady", steady == null ? null : finite(steady.inSchedulerFilterP99Ms()));
    putOrNull(o, "burstSecondsSteady", steady == null ? null : steady.burstSeconds());
    o.put("placedSteady", steady == null ? 0 : steady.audit().placed());
    o.put("bindsSteady", steady == null ? 0 : steady.successfulBinds());
    o.put("lostSteady", steady == null ? 0 : steady.audit().lostCount());
    if (steady != null) {
      steady.audit().lost().forEach(problems::add);
    }
    if (!r.steadySkipped().isEmpty()) {
      o.put("steadySkipped", r.steadySkipped());
    }
    return o;
  }

  private static Double finite(double value) {
    return Double.isFinite(value) ? value : null;
  }

  private static void putOrNull(ObjectNode o, String key, Double value) {
    if (value == null) {
      o.putNull(key);
    } else {
      o.put(key, value.doubleValue());
    }
  }

  /** A table, one row per cluster size, then what went wrong, if anything. */
  static String text(List<ThroughputResult> results) {
    TextTable table =
        new TextTable("NODES", "PODS", "RUNNING", "PODS/S", "CPU MS/POD", "FILTER P50/P99 MS", "BIND P50/P99 MS", "HEAP MIB", "ENGINE PODS/S", "PLACED", "LOST", "OVERBOOKED");
    for (ThroughputResult r : results) {
      table.row(
          Integer.toString(r.nodes()),
          Integer.toString(r.pods()),
          Integer.toString(r.running()),
          number(r.podsPerSecond()),
          number(r.schedulerCpuMsPerPod()),
          number(r.filterP50Ms()) + " / " + number(r.filterP99Ms()),
          number(r.bindP50Ms()) + " / " + number(r.bindP99Ms()),
          number(r.heapMiB()),
          number(r.enginePodsPerSecond()),
          Integer.toString(r.audit().placed()),
          Integer.toString(r.audit().lostCount()),
          Integer.toString(r.audit().overbookedCount()));
    }
    StringBuilder out = new StringBuilder(table.render(""));
    for (ThroughputResult r : results) {
      String where = r.nodes() + " nodes: ";
      r.audit().lost().forEach(l -> out.append(where).append("not placed: ").append(l).append('\n'));
      r.audit().overbooked().forEach(l -> out.append(where).append("over-committed: ").append(l).append('\n'));
      if (r.successfulBinds() != r.pods()) {
        out.append(where).append(r.successfulBinds()).append(" binds accepted for ").append(r.pods()).append(" pods\n");
      }
      r.bindRejections().forEach((kind, n) -> out.append(where).append(n).append(" binds refused: ").append(kind).append('\n'));
      out.append(where).append(String.format(Locale.ROOT,
          "burst %.2f s, scheduler's JIT %.2f ms and stand-ins' CPU %.2f ms (JIT %.2f) per pod (they ran %d pods before), set-up %.1f s, %d binds in flight, load average %s%n",
          r.burstSeconds(), r.schedulerJitCpuMsPerPod(), r.standInCpuMsPerPod(), r.standInJitCpuMsPerPod(), r.standInsPodsBefore(), r.setupSeconds(), r.bindsInFlight(), r.loadAverage()));
      out.append(where).append("filter p50/p99 inside the scheduler (its histogram's bucket bounds): ").append(number(r.inSchedulerFilterP50Ms())).append(" / ")
          .append(number(r.inSchedulerFilterP99Ms())).append(" ms\n");
      if (r.steady().isPresent()) {
        ThroughputResult.Steady s = r.steady().get();
        out.append(where).append(String.format(Locale.ROOT,
            "steady state (%d pods after %d): scheduler CPU %s ms per pod (JIT %s), filter p50/p99 %s / %s ms (p99 inside the scheduler %s ms), bind p99 %s ms, burst %.2f s, stand-ins' CPU %.2f ms per pod (JIT %.2f)%n",
            s.pods(), s.warmupPods(), number(s.schedulerCpuMsPerPod()), number(s.schedulerJitCpuMsPerPod()), number(s.filterP50Ms()), number(s.filterP99Ms()), number(s.inSchedulerFilterP99Ms()), number(s.bindP99Ms()),
            s.burstSeconds(), s.standInCpuMsPerPod(), s.standInJitCpuMsPerPod()));
        s.audit().lost().forEach(l -> out.append(where).append("not placed (steady state): ").append(l).append('\n'));
        if (s.successfulBinds() != s.pods()) {
          out.append(where).append(s.successfulBinds()).append(" binds accepted for ").append(s.pods()).append(" steady-state pods\n");
        }
      } else if (!r.steadySkipped().isEmpty()) {
        out.append(where).append("no steady-state burst: ").append(r.steadySkipped()).append('\n');
      }
    }
    return out.toString();
  }

  private static String number(double value) {
    return value == Math.rint(value) && Math.abs(value) < 1e15 ? Long.toString((long) value) : String.format(Locale.ROOT, "%.2f", value);
  }
}
