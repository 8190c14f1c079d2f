package io.vgpu.examples.lab;

import io.vgpu.examples.lab.checks.Check;
import io.vgpu.examples.lab.report.LabText;
import io.vgpu.k8s.cli.GoDuration;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.yaml.InputException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code vgpu lab}: runs a scenario through the whole system — the real scheduler and node agents as
 * processes, stand-ins for the API server, kube-scheduler and kubelets, containers as real processes
 * over the mock driver — or a built-in suite of scenarios with their checks (LAB.md).
 */
@Command(
    name = LabCommand.NAME,
    mixinStandardHelpOptions = true,
    description = "Run a scenario through the whole system on this machine: real components, real processes, mock GPUs (LAB.md).")
public final class LabCommand implements Callable<Integer> {
  /** The subcommand's name. */
  public static final String NAME = "lab";

  @Parameters(index = "0", arity = "0..1", paramLabel = "FILE", description = "A scenario file (YAML or JSON; simulate's format plus restart, wait, scrape and checks).")
  @Nullable Path file;

  @Option(names = "--suite", paramLabel = "NAME", description = "Run a built-in suite of scenarios and their checks (hami: every check of the mock-GPU lab report; attacks, cluster, enforcement, kai, queues:"
          + " the directories of examples/lab).")
  @Nullable String suite;

  @Option(names = "--output", defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  Output output;

  @Option(names = "--keep", paramLabel = "DIR", description = "Keep every component's log, each container's output and the API objects in DIR.")
  @Nullable Path keep;

  @Option(names = "--settle-timeout", defaultValue = "30s", converter = GoDuration.class, description = "Bound of every wait (default ${DEFAULT-VALUE}; a component gets at least 90 s to start).")
  Duration settleTimeout;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** Output formats. */
  enum Output {
    text,
    json
  }

  @Override
  public Integer call() {
    if ((file == null) == (suite == null)) {
      throw new CommandLine.ParameterException(spec.commandLine(), "give a scenario FILE or --suite NAME (one of them)");
    }
    // grpc's netty warns that unix sockets ignore SO_KEEPALIVE, once per socket: noise in a lab's output
    System.setProperty("org.slf4j.simpleLogger.log.io.grpc.netty.shaded.io.netty.bootstrap", "error");
    // fabric8 warns once per custom resource of a pre-release API version: KAI's BindRequest and PodGroup are
    // v1alpha2 and v2alpha2 by KAI's choice, nothing a lab user can act on
    System.setProperty("org.slf4j.simpleLogger.log.io.fabric8.kubernetes.client.dsl.internal.VersionUsageUtils", "error");
    PrintWriter out = spec.commandLine().getOut();
    LabHome home = LabHome.locate();
    LabPreflight.check(home);
    if (suite != null) {
      LabSuite.Result result = new LabSuite(home, suite, settleTimeout, keep).run(out, output == Output.json);
      return result.allPassed() ? 0 : 1;
    }
    Scenario scenario = new ScenarioParser(Set.of("fgd", "vgpu", "bestfit", "random")).parse(file);
    ObjectNode report = runScenario(home, scenario, settleTimeout, keep);
    if (output == Output.json) {
      out.print(SimulationJson.pretty(report));
    } else {
      out.print(LabText.render(report));
      List<Check> checks = scenario.checks().map(Check::parse).orElse(List.of());
      if (!checks.isEmpty()) {
        out.print("\nCHECKS\n" + LabText.checks(checks.stream().map(c -> c.evaluate(report)).toList()));
      }
    }
    out.flush();
    return 0;
  }

  /**
   * Runs one scenario and returns its report, with {@code seconds}.
   *
   * @throws InputException on bad input
   * @throws UnavailableException when the system cannot run it
   */
  static ObjectNode runScenario(LabHome home, Scenario scenario, Duration settleTimeout, @Nullable Path keep) {
    long start = System.nanoTime();
    try (LabWorkspace workspace = keep == null ? LabWorkspace.temporary() : LabWorkspace.kept(keep);
        InterruptGuard guard = new InterruptGuard(workspace)) {
      LabCluster cluster = LabCluster.start(home, scenario, workspace, settleTimeout, guard::protect);
      double startup = Math.round((System.nanoTime() - start) / 1e7) / 100.0;
      try {
        ObjectNode report = new LabRun(scenario, cluster, settleTimeout).run();
        report.put("startupSeconds", startup);
        report.put("seconds", Math.round((System.nanoTime() - start) / 1e7) / 100.0);
        if (workspace.kept()) {
          LabKeep.writeApiObjects(cluster, workspace);
          workspace.write("report.json", SimulationJson.pretty(report));
        }
        return report;
      } finally {
        cluster.close();
      }
    }
  }
}
