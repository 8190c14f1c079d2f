package io.vgpu.examples.lab.report;

import io.vgpu.examples.lab.checks.Check;
import io.vgpu.k8s.simulate.TextTable;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * The readable form of a lab report: simulate's tables (pods, timeline, nodes) plus one line per
 * container with its state and each probe result, then the Events.
 */
public final class LabText {
  private LabText() {}

  /** The report as tables. */
  public static String render(JsonNode report) {
    StringBuilder out = new StringBuilder();
    TextTable pods = new TextTable("NAMESPACE", "NAME", "PHASE", "NODE", "DETAILS");
    for (JsonNode p : report.path("pods")) {
      pods.row(p.path("namespace").asString(), p.path("name").asString(), p.path("phase").asString(), p.path("node").asString("-"), details(p));
    }
    out.append("PODS\n").append(pods.render(""));
    TextTable containers = new TextTable("POD", "CONTAINER", "STATE", "RESTARTS", "PROBE");
    boolean any = false;
    for (JsonNode p : report.path("pods")) {
      List<JsonNode> all = new ArrayList<>();
      p.path("initContainers").forEach(all::add);
      p.path("containers").forEach(all::add);
      for (JsonNode c : all) {
        any = true;
        String state = c.path("state").asString("");
        if (state.equals("terminated")) {
          state += " (exit " + c.path("exitCode").asInt() + (c.path("signal").isNull() ? "" : ", signal " + c.path("signal").asInt()) + ")";
        }
        containers.row(p.path("namespace").asString() + "/" + p.path("name").asString(), c.path("name").asString(), state,
            Integer.toString(c.path("restarts").asInt()), observed(c));
      }
    }
    if (any) {
      out.append("\nCONTAINERS\n").append(containers.render(""));
    }
    TextTable timeline = new TextTable("STEP", "EVENT", "SCHEDULED");
    for (JsonNode s : report.path("timeline")) {
      List<String> scheduled = new ArrayList<>();
      s.path("scheduled").forEach(x -> scheduled.add(x.asString()));
      timeline.row(Integer.toString(s.path("step").asInt()), s.path("event").asString() + patchOutcome(s.path("patch")), scheduled.isEmpty() ? "-" : String.join(", ", scheduled));
    }
    out.append("\nTIMELINE\n").append(timeline.render(""));
    TextTable nodes = new TextTable("NODE", "UUID", "TYPE", "MEMORY MiB", "CORES", "SHARERS");
    for (JsonNode n : report.path("nodes")) {
      if (n.path("devices").isEmpty()) {
        nodes.row(n.path("name").asString(), "-", "-", "-", "-", "-");
      }
      for (JsonNode d : n.path("devices")) {
        nodes.row(n.path("name").asString(), d.path("uuid").asString(), d.path("type").asString(),
            d.path("usedMemoryMiB").asLong() + "/" + d.path("memoryMiB").asLong(), d.path("usedCores").asInt() + "/" + d.path("cores").asInt(),
            d.path("sharers").asInt() + "/" + d.path("splitCount").asInt());
      }
    }
    out.append("\nNODES\n").append(nodes.render(""));
    TextTable events = new TextTable("OBJECT", "TYPE", "REASON", "COUNT", "MESSAGE");
    for (JsonNode e : report.path("events")) {
      events.row(e.path("object").asString(), e.path("type").asString(), e.path("reason").asString(), Integer.toString(e.path("count").asInt()), e.path("message").asString());
    }
    if (!report.path("events").isEmpty()) {
      out.append("\nEVENTS\n").append(events.render(""));
    }
    out.append("\n").append(report.path("seconds").asDouble()).append(" s\n");
    return out.toString();
  }

  /** A check matrix: check, expected, observed, pass or FAIL. */
  public static String checks(List<Check.Result> results) {
    TextTable table = new TextTable("CHECK", "EXPECTED", "OBSERVED", "RESULT");
    for (Check.Result r : results) {
      table.row(r.check() == null ? "placements equal vgpu simulate's" : r.check().name(), r.expected(), r.observed(), r.passed() ? "pass" : "FAIL");
    }
    return table.render("  ");
  }

  private static String details(JsonNode p) {
    if (p.has("message") && p.path("phase").asString().equals("Rejected")) {
      return p.path("message").asString();
    }
    if (p.has("reasons")) {
      List<String> parts = new ArrayList<>();
      p.path("reasons").properties().forEach(e -> parts.add(e.getKey().isEmpty() ? e.getValue().asString() : e.getKey() + ": " + e.getValue().asString()));
      return String.join("; ", parts);
    }
    List<String> parts = new ArrayList<>();
    List<JsonNode> all = new ArrayList<>();
    p.path("initContainers").forEach(all::add);
    p.path("containers").forEach(all::add);
    for (JsonNode c : all) {
      if (c.path("devices").isEmpty()) {
        continue;
      }
      List<String> cards = new ArrayList<>();
      c.path("devices").forEach(d -> cards.add(d.path("uuid").asString() + " " + d.path("memoryMiB").asLong() + " MiB " + d.path("cores").asInt() + " cores"));
      parts.add(c.path("name").asString() + ": " + String.join(", ", cards));
    }
    return parts.isEmpty() ? "-" : String.join("; ", parts);
  }

  private static String observed(JsonNode c) {
    List<String> parts = new ArrayList<>();
    for (JsonNode o : c.path("observed")) {
      parts.add(o.toString());
    }
    if (parts.isEmpty()) {
      return "-";
    }
    return String.join(" ", parts) + (c.path("complete").asBoolean(false) ? "" : " (ops still running)");
  }

  /** A patch event's outcome after its name: {@code : allowed}, or {@code : refused: <the API server's message>}. */
  private static String patchOutcome(JsonNode patch) {
    if (patch.isMissingNode()) {
      return "";
    }
    return patch.path("allowed").asBoolean(false) ? ": allowed" : ": refused: " + patch.path("message").asString("");
  }
}
