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
    o.put("standInCpuMsPerPod", r.standInCpuMsPerPod());
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
    o.put("setupSeconds", r.setupSeconds());
    ArrayNode load = o.putArray("loadAverage");
    r.loadAverage().forEach(load::add);
    return o;
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
      out.append(where).append(String.format(Locale.ROOT, "burst %.2f s, stand-ins' CPU %.2f ms per pod, set-up %.1f s, %d binds in flight, load average %s%n",
          r.burstSeconds(), r.standInCpuMsPerPod(), r.setupSeconds(), r.bindsInFlight(), r.loadAverage()));
    }
    return out.toString();
  }

  private static String number(double value) {
    return value == Math.rint(value) && Math.abs(value) < 1e15 ? Long.toString((long) value) : String.format(Locale.ROOT, "%.2f", value);
  }
}
