package io.vgpu.k8s.cli;

import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.core.Engine;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.simulate.NodeAgentSelector;
import io.vgpu.k8s.simulate.PodExplanation;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.simulate.SimulationResult;
import io.vgpu.k8s.simulate.SimulationText;
import io.vgpu.k8s.simulate.Simulator;
import io.vgpu.k8s.yaml.InputException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code vgpu simulate FILE [--output json] [--explain POD]}: replays a scenario file. Warnings about the
 * scenario (a GPU node the chart's node agent would not run on) go to standard error, one line each.
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    description =
        "Replays a scenario (a cluster with GPUs and pod events) through admission, the scheduler and its"
            + " annotations, and prints where every pod ended up.")
final class SimulateCommand implements Callable<Integer> {

  /** Output formats. */
  enum Format {
    TABLE,
    JSON
  }

  @Parameters(index = "0", paramLabel = "FILE", description = "The scenario, YAML or JSON.")
  Path file;

  @Option(names = "--output", paramLabel = "FORMAT", description = "table (default) or json.")
  Format output = Format.TABLE;

  @Option(names = "--explain", paramLabel = "POD", description = "Explain why POD (name or namespace/name) runs where it runs or waits.")
  String explain;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() {
    Engine probe = Engine.create();
    Scenario scenario = new ScenarioParser(new HashSet<>(probe.placementPolicies())).parse(file);
    String vendor = scenario.config().schema().vendor();
    ContainerContractProvider contracts =
        ServiceLoader.load(ContainerContractProvider.class, SimulateCommand.class.getClassLoader()).stream()
            .map(ServiceLoader.Provider::get)
            .filter(p -> p.vendor().equals(vendor))
            .findFirst()
            .orElse(null);
    Simulator simulator = new Simulator(scenario, Engine::builder, contracts);
    SimulationResult result = simulator.replay();
    PrintWriter err = spec.commandLine().getErr();
    NodeAgentSelector.warnings(scenario).forEach(w -> err.println("vgpu: warning: " + w));
    err.flush();
    PrintWriter out = spec.commandLine().getOut();
    if (explain != null) {
      PodRef pod;
      try {
        pod = PodRefs.parse(explain);
      } catch (IllegalArgumentException e) {
        throw new InputException("--explain: " + e.getMessage());
      }
      PodExplanation explanation = simulator.explain(pod);
      out.print(output == Format.JSON ? SimulationJson.pretty(SimulationJson.explanation(explanation)) : SimulationText.explanation(explanation));
    } else {
      out.print(output == Format.JSON ? SimulationJson.pretty(SimulationJson.result(result)) : SimulationText.result(result));
    }
    out.flush();
    return 0;
  }
}
