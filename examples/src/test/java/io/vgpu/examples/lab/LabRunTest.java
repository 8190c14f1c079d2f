package io.vgpu.examples.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.lab.checks.Check;
import io.vgpu.examples.lab.checks.SimulateAgreement;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * Lab scenarios end to end: the real scheduler and node agents as processes, containers as processes
 * over the mock driver. Each report satisfies every check its scenario states and places every pod where
 * {@code vgpu simulate} does. Every scenario of the hami suite runs here (what {@code vgpu lab --suite
 * hami} runs, the smoke scenario with a look at the report's shape), every attack of {@code --suite
 * attacks} (each refused or stopped, the honest pods beside it untouched), the node watchdog's (a container
 * escaping the interposer killed, or reported, by the real node agent; one within its grant untouched),
 * the cluster's other parts (the default scheduler, NVIDIA's runtime as the node's default), the kai
 * suite (vgpu under KAI Scheduler's stand-in) and the queues suite (KAI's pod dialect scheduled by vgpu).
 */
class LabRunTest {
  private static JsonNode runAndCheck(String suiteFile) throws Exception {
    Scenario scenario = new ScenarioParser(Set.of()).parse(LabHome.locate().suitesDirectory().resolve(suiteFile));
    JsonNode report = runAndCheckOnly(suiteFile);
    assertThat(SimulateAgreement.differences(scenario, report)).isEmpty();
    return report;
  }

  /** Runs a scenario and its checks, leaving out the placement-agreement check. */
  private static JsonNode runAndCheckOnly(String suiteFile) throws Exception {
    LabHome home = LabAssumptions.labHome();
    Path file = home.suitesDirectory().resolve(suiteFile);
    Scenario scenario = new ScenarioParser(Set.of()).parse(file);
    JsonNode report = LabCommand.runScenario(home, scenario, Duration.ofSeconds(90), null);
    List<Check> checks = Check.parse(scenario.checks().orElseThrow());
    assertThat(checks).isNotEmpty();
    for (Check check : checks) {
      Check.Result result = check.evaluate(report);
      assertThat(result.passed()).as(suiteFile + ": " + check.name() + ": expected " + result.expected() + ", observed " + result.observed()).isTrue();
    }
    return report;
  }

  /** The hami suite's scenarios after the smoke scenario, as {@code --suite hami} finds them. */
  static Stream<String> hamiScenarios() throws IOException {
    try (Stream<Path> files = Files.list(LabHome.locate().suitesDirectory().resolve("hami"))) {
      List<String> names = files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml") && !n.startsWith("01-")).sorted().toList();
      return names.stream().map(n -> "hami/" + n);
    }
  }

  @ParameterizedTest
  @MethodSource("hamiScenarios")
  void everyHamiScenarioRunsThroughTheWholeSystem(String file) throws Exception {
    runAndCheck(file);
  }

  /** Every attack a tenant can mount from its own namespace, as {@code --suite attacks} finds them. */
  static Stream<String> attackScenarios() throws IOException {
    try (Stream<Path> files = Files.list(LabHome.locate().suitesDirectory().resolve("attacks"))) {
      return files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml")).sorted().toList().stream().map(n -> "attacks/" + n);
    }
  }

  @ParameterizedTest
  @MethodSource("attackScenarios")
  void everyAttackOfATenantFailsAndTheHonestPodsBesideItAreUntouched(String file) throws Exception {
    runAndCheck(file);
  }

  @ParameterizedTest
  @ValueSource(strings = {"enforcement/01-watchdog-kills-an-escape.yaml", "enforcement/02-watchdog-reports-an-escape.yaml"})
  void theNodeWatchdogHoldsContainersToTheirGrant(String file) throws Exception {
    runAndCheck(file);
  }

  @ParameterizedTest
  @ValueSource(strings = {"cluster/01-default-scheduler.yaml", "cluster/02-nvidia-runtime.yaml", "cluster/04-kubelet-env-and-volumes.yaml"})
  void theClustersOtherPartsBehaveAsOnARealNode(String file) throws Exception {
    runAndCheck(file);
  }

  /** The kai suite's scenarios, as {@code --suite kai} finds them. */
  static Stream<String> kaiScenarios() throws IOException {
    try (Stream<Path> files = Files.list(LabHome.locate().suitesDirectory().resolve("kai"))) {
      return files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml")).sorted().toList().stream().map(n -> "kai/" + n);
    }
  }

  /**
   * Under KAI Scheduler (its stand-in schedules and shares, vgpu isolates): seed 001's claims and past its
   * step 8; the agreement with simulate covers the pods vgpu schedules (none of KAI's).
   */
  @ParameterizedTest
  @MethodSource("kaiScenarios")
  void underKaiSchedulerVgpuIsolatesWhatKaiShares(String file) throws Exception {
    // the chart's render with its KAI values lands with the chart's change; until then there is nothing to run
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(LabHome.locate().kaiDeployDirectory()), "examples/deploy-kai is not rendered yet");
    JsonNode report = runAndCheck(file);
    for (JsonNode pod : report.path("pods")) {
      if (pod.path("namespace").asString().equals("kai-resource-reservation")) {
        assertThat(pod.path("phase").asString()).as(pod.path("name").asString()).isEqualTo("Running");
        assertThat(pod.path("containers").get(0).path("observed").get(0).path("result").asInt(-1)).as(pod.path("name").asString()).isZero();
      }
    }
  }

  /** The queues suite's scenarios, as {@code --suite queues} finds them. */
  static Stream<String> queueScenarios() throws IOException {
    try (Stream<Path> files = Files.list(LabHome.locate().suitesDirectory().resolve("queues"))) {
      return files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml")).sorted().toList().stream().map(n -> "queues/" + n);
    }
  }

  /**
   * KAI's pod dialect scheduled by vgpu itself (the chart's KAI-dialect render): KAI's portions placed by
   * vgpu's rules, a queue's limit, a queue that appears, a gang held until it fits whole, the queues on
   * the scheduler's metrics; placed where simulate places them.
   */
  @ParameterizedTest
  @MethodSource("queueScenarios")
  void kaisPodDialectRunsThroughVgpusOwnSchedulerWithQueuesAndGangs(String file) throws Exception {
    JsonNode report = runAndCheck(file);
    assertThat(report.path("pods").findValues("waiting")).as("pods that wait say why").isNotEmpty();
  }

  @Test
  void aGpuNodeWithoutTheNodeAgentsLabelIsNamedWhereLabAndSimulateDisagree() throws Exception {
    String file = "cluster/03-unlabelled-node.yaml";
    JsonNode report = runAndCheckOnly(file);
    Scenario scenario = new ScenarioParser(Set.of()).parse(LabHome.locate().suitesDirectory().resolve(file));
    assertThat(SimulateAgreement.differences(scenario, report)).containsExactly("apps/only-there: simulate places it on unlabelled, the lab leaves it Pending"
        + " (unlabelled: node unregistered: node unlabelled has no node agent: it lacks the label gpu=on the DaemonSet selects)");
  }

  @Test
  void theSmokeScenarioRunsThroughTheWholeSystem() throws Exception {
    JsonNode report = runAndCheck("hami/01-smoke-and-isolation.yaml");

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
