package io.vgpu.examples.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.lab.checks.Check;
import io.vgpu.examples.lab.checks.SimulateAgreement;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * One lab scenario end to end: the real scheduler and node agents as processes, containers as
 * processes over the mock driver. Its report satisfies every check the scenario states and places every
 * pod where {@code vgpu simulate} does; the report has LAB.md's shape.
 */
class LabRunTest {
  @Test
  void theSmokeScenarioRunsThroughTheWholeSystem() throws Exception {
    LabHome home = LabAssumptions.labHome();
    Path file = home.suitesDirectory().resolve("hami/01-smoke-and-isolation.yaml");
    Scenario scenario = new ScenarioParser(Set.of()).parse(file);
    JsonNode report = LabCommand.runScenario(home, scenario, Duration.ofSeconds(60), null);

    List<Check> checks = Check.parse(scenario.checks().orElseThrow());
    assertThat(checks).isNotEmpty();
    for (Check check : checks) {
      Check.Result result = check.evaluate(report);
      assertThat(result.passed()).as(check.name() + ": expected " + result.expected() + ", observed " + result.observed()).isTrue();
    }
    assertThat(SimulateAgreement.differences(scenario, report)).isEmpty();

    assertThat(report.propertyNames()).contains("pods", "timeline", "nodes", "events", "metrics", "uids", "seconds");
    JsonNode container = report.path("pods").get(0).path("containers").get(0);
    assertThat(container.propertyNames()).contains("name", "devices", "env", "state", "exitCode", "signal", "reason", "restarts", "containerID", "pid", "startedAt",
        "complete", "observed");
    assertThat(container.path("state").asString()).isEqualTo("running");
    assertThat(container.path("containerID").asString()).matches("containerd://[0-9a-f]{64}");
    assertThat(container.path("complete").asBoolean()).isTrue();
    assertThat(report.path("uids").path("hami-tests/smoke").asString()).isNotEmpty();
    assertThat(report.path("timeline").get(0).path("metrics").path("scheduler").size()).isPositive();
  }
}
