package io.vgpu.examples.lab;

import io.vgpu.examples.lab.checks.Check;
import io.vgpu.examples.lab.checks.SimulateAgreement;
import io.vgpu.examples.lab.report.LabText;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.yaml.InputException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A built-in suite: every scenario of {@code examples/lab/<suite>/} run through the lab, each with its
 * checks and one more — that its placements equal {@code vgpu simulate}'s — printed as a matrix of
 * check, expected, observed and pass/fail. A scenario that cannot run fails its checks and the suite
 * goes on with the next one.
 */
final class LabSuite {
  private final LabHome home;
  private final String name;
  private final Duration settleTimeout;
  private final @Nullable Path keep;

  /**
   * The outcome.
   *
   * @param passed checks that held
   * @param failed checks that did not
   */
  record Result(int passed, int failed) {
    boolean allPassed() {
      return failed == 0 && passed > 0;
    }
  }

  private record Planned(Path file, Scenario scenario, List<Check> checks) {}

  LabSuite(LabHome home, String name, Duration settleTimeout, @Nullable Path keep) {
    this.home = home;
    this.name = name;
    this.settleTimeout = settleTimeout;
    this.keep = keep;
  }

  Result run(PrintWriter out, boolean json) {
    List<Planned> plan = plan();
    long start = System.nanoTime();
    int passed = 0;
    int failed = 0;
    ObjectNode root = PodJson.mapper().createObjectNode();
    root.put("suite", name);
    ArrayNode scenarios = root.putArray("scenarios");
    for (Planned p : plan) {
      String scenarioName = p.file().getFileName().toString();
      List<Check.Result> results = new ArrayList<>();
      ObjectNode report = null;
      String failure = "";
      try {
        report = LabCommand.runScenario(home, p.scenario(), settleTimeout, keep == null ? null : keep.resolve(scenarioName.replaceFirst("\\.ya?ml$", "")));
        for (Check check : p.checks()) {
          results.add(check.evaluate(report));
        }
        List<String> differences = SimulateAgreement.differences(p.scenario(), report);
        results.add(new Check.Result(null, "placements equal vgpu simulate's", differences.isEmpty() ? "equal" : String.join("; ", differences), differences.isEmpty()));
      } catch (UnavailableException e) {
        failure = e.getMessage();
      }
      ObjectNode entry = scenarios.addObject();
      entry.put("file", home.root().relativize(p.file()).toString());
      entry.put("seconds", report == null ? 0 : report.path("seconds").asDouble());
      if (!failure.isEmpty()) {
        entry.put("error", failure);
        failed += Math.max(1, p.checks().size() + 1);
      }
      ArrayNode checks = entry.putArray("checks");
      for (Check.Result r : results) {
        ObjectNode c = checks.addObject();
        c.put("check", r.check() == null ? "placements equal vgpu simulate's" : r.check().name());
        c.put("expected", r.expected());
        c.put("observed", r.observed());
        c.put("passed", r.passed());
        if (r.passed()) {
          passed++;
        } else {
          failed++;
        }
      }
      if (!json) {
        printScenario(out, entry, results);
      }
    }
    double seconds = Math.round((System.nanoTime() - start) / 1e7) / 100.0;
    root.put("passed", passed);
    root.put("failed", failed);
    root.put("seconds", seconds);
    if (json) {
      out.print(SimulationJson.pretty(root));
    } else {
      out.println("SUITE " + name + ": " + (passed + failed) + " checks, " + passed + " passed, " + failed + " failed, " + plan.size() + " scenarios in " + seconds + " s");
    }
    out.flush();
    return new Result(passed, failed);
  }

  private static void printScenario(PrintWriter out, ObjectNode entry, List<Check.Result> results) {
    out.println(entry.path("file").asString() + " (" + entry.path("seconds").asDouble() + " s)");
    if (entry.has("error")) {
      out.println("  FAIL  the scenario did not run: " + entry.path("error").asString());
    }
    out.print(LabText.checks(results));
    out.println();
    out.flush();
  }

  /** Reads every scenario and its checks before anything runs: bad input stops the suite at once. */
  private List<Planned> plan() {
    Path dir = home.suitesDirectory().resolve(name);
    if (!Files.isDirectory(dir)) {
      throw new InputException("--suite: unknown suite '" + name + "' (suites: " + String.join(", ", suites()) + ")");
    }
    List<Path> files;
    try (Stream<Path> list = Files.list(dir)) {
      files = list.filter(f -> f.toString().endsWith(".yaml") || f.toString().endsWith(".yml")).sorted().toList();
    } catch (IOException e) {
      throw new UnavailableException("cannot list " + dir + ": " + e.getMessage());
    }
    ScenarioParser parser = new ScenarioParser(Set.of("fgd", "vgpu", "bestfit", "random"));
    List<Planned> out = new ArrayList<>();
    for (Path f : files) {
      Scenario scenario = parser.parse(f);
      List<Check> checks = scenario.checks().map(Check::parse).orElse(List.of());
      if (checks.isEmpty()) {
        throw new InputException(f + ": a suite scenario needs checks");
      }
      out.add(new Planned(f, scenario, checks));
    }
    return out;
  }

  private List<String> suites() {
    try (Stream<Path> list = Files.list(home.suitesDirectory())) {
      return list.filter(Files::isDirectory).map(p -> p.getFileName().toString()).sorted().toList();
    } catch (IOException e) {
      return List.of();
    }
  }
}
