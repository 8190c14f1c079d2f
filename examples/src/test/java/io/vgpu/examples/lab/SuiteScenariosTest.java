package io.vgpu.examples.lab;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.core.Engine;
import io.vgpu.examples.lab.checks.Check;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationResult;
import io.vgpu.k8s.simulate.Simulator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every scenario of the built-in suites is also a {@code vgpu simulate} scenario (restart, wait and scrape
 * are no-ops there) and states checks that parse: one file answers both "where" and "what happens".
 */
class SuiteScenariosTest {
  static Stream<Path> scenarios() throws IOException {
    try (Stream<Path> files = Files.walk(Path.of("lab"))) {
      return files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList().stream();
    }
  }

  @ParameterizedTest
  @MethodSource("scenarios")
  void simulateReplaysItAndItsChecksParse(Path file) {
    Scenario scenario = new ScenarioParser(Set.of()).parse(file);
    SimulationResult result = new Simulator(scenario, Engine::builder, null).replay();
    assertThat(result.timeline()).hasSize(scenario.events().size());
    List<Check> checks = Check.parse(scenario.checks().orElseThrow());
    assertThat(checks).as(file + " states checks").isNotEmpty();
  }
}
