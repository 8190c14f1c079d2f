package io.vgpu.bench.placement;

import static io.vgpu.bench.placement.TraceFiles.NODE_HEADER;
import static io.vgpu.bench.placement.TraceFiles.POD_HEADER;
import static io.vgpu.bench.placement.TraceFiles.pod;
import static io.vgpu.bench.placement.TraceFiles.write;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.cli.SubcommandProvider;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

class PlacementBenchCommandTest {
  @TempDir Path dir;
  private Path nodes;
  private Path pods;
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  @BeforeEach
  void writeTrace() {
    List<String> nodeRows = new ArrayList<>(List.of(NODE_HEADER));
    IntStream.range(0, 6).forEach(i -> nodeRows.add("node-" + i + ",32000,131072," + (i % 2 == 0 ? 4 : 2) + ",T4"));
    nodes = write(dir, "nodes.csv", nodeRows.toArray(String[]::new));
    List<String> podRows = new ArrayList<>(List.of(POD_HEADER));
    int[] shares = {1000, 500, 300, 1000, 0, 700};
    IntStream.range(0, 30).forEach(i -> podRows.add(pod("pod-" + i, 2000 + 500L * (i % 5), 4096, shares[i % 6] == 0 ? 0 : 1, shares[i % 6], "")));
    pods = write(dir, "tiny.csv", podRows.toArray(String[]::new));
  }

  private int run(String... args) {
    CommandLine cli = new CommandLine(new PlacementBenchCommand());
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    return cli.execute(args);
  }

  /** The trace's files, three seeds and two threads, plus {@code extra} (which may set the seeds). */
  private String[] args(String... extra) {
    List<String> all = new ArrayList<>(List.of("--nodes", nodes.toString(), "--pods", pods.toString(), "--threads", "2"));
    all.addAll(List.of(extra));
    if (!all.contains("--seeds")) {
      all.addAll(List.of("--seeds", "1..3"));
    }
    return all.toArray(String[]::new);
  }

  @Test
  void onePolicyGivesOneJsonObjectWithThePromisedKeys() throws Exception {
    assertThat(run(args("--policy", "fgd", "--output", "json"))).isZero();

    JsonNode report = new ObjectMapper().readTree(out.toString());
    assertThat(report.isObject()).isTrue();
    assertThat(report.propertyNames()).containsExactly("policy", "trace", "seeds", "median", "mean");
    assertThat(report.get("policy").asString()).isEqualTo("fgd");
    assertThat(report.get("trace").asString()).isEqualTo("tiny");
    assertThat(report.get("seeds")).hasSize(3);
    JsonNode seed = report.get("seeds").get(0);
    assertThat(seed.propertyNames())
        .containsExactly(
            "seed", "unallocatedAt100", "finalAllocation", "curve", "fragmentationAmountAt100", "fragmentationRateAt100", "wallSeconds");
    assertThat(seed.get("seed").asLong()).isEqualTo(1);
    assertThat(seed.get("finalAllocation").isNumber()).isTrue();
    List<String> curveKeys = IntStream.rangeClosed(75, 130).mapToObj(Integer::toString).toList();
    assertThat(seed.get("curve").propertyNames()).containsExactlyElementsOf(curveKeys);
    for (String aggregate : List.of("median", "mean")) {
      assertThat(report.get(aggregate).propertyNames())
          .containsExactly(
              "unallocatedAt100", "finalAllocation", "curve", "fragmentationAmountAt100", "fragmentationRateAt100", "wallSeconds");
      assertThat(report.get(aggregate).get("curve").propertyNames()).containsExactlyElementsOf(curveKeys);
    }
    // Percentages are plain numbers: unallocated and allocated add up to 100 at the end.
    double finalAllocation = seed.get("finalAllocation").asDouble();
    assertThat(finalAllocation).isBetween(0.0, 100.0);
  }

  @Test
  void severalPoliciesGiveAnArrayInTheOrderGiven() throws Exception {
    assertThat(run(args("--policy", "vgpu,random,binpack", "--output", "json"))).isZero();
    JsonNode reports = new ObjectMapper().readTree(out.toString());
    assertThat(reports.isArray()).isTrue();
    assertThat(reports).extracting(r -> r.get("policy").asString()).containsExactly("vgpu", "random", "binpack");
  }

  @Test
  void asDeployedRunsSitBesideTheOracleOnesInTheSameShape() throws Exception {
    assertThat(run(args("--policy", "vgpu", "--as-deployed", "--output", "json"))).isZero();

    JsonNode report = new ObjectMapper().readTree(out.toString());
    assertThat(report.propertyNames()).containsExactly("policy", "trace", "seeds", "median", "mean", "asDeployed");
    assertThat(report.get("median").get("unallocatedAt100").isNumber()).isTrue();
    JsonNode deployed = report.get("asDeployed");
    assertThat(deployed.propertyNames()).containsExactly("cpuOnlyPods", "seeds", "median", "mean");
    assertThat(deployed.get("cpuOnlyPods").asString()).isEqualTo("default-scheduler");
    assertThat(deployed.get("seeds")).extracting(s -> s.get("seed").asLong()).containsExactly(1L, 2L, 3L);
    assertThat(deployed.get("seeds").get(0).propertyNames()).containsExactlyElementsOf(report.get("seeds").get(0).propertyNames());
    assertThat(deployed.get("median").propertyNames()).containsExactlyElementsOf(report.get("median").propertyNames());
    assertThat(deployed.get("median").get("unallocatedAt100").isNumber()).isTrue();

    out.getBuffer().setLength(0);
    assertThat(run(args("--policy", "fgd,vgpu", "--as-deployed", "--cpu-only-pods", "policy", "--output", "json"))).isZero();
    JsonNode reports = new ObjectMapper().readTree(out.toString());
    assertThat(reports).extracting(r -> r.get("asDeployed").get("cpuOnlyPods").asString()).containsExactly("policy", "policy");
  }

  @Test
  void asDeployedTextFollowsEachOracleTable() {
    assertThat(run(args("--policy", "bestfit,vgpu", "--as-deployed"))).isZero();
    String text = out.toString();
    assertThat(text.indexOf("bestfit on tiny"))
        .isLessThan(text.indexOf("bestfit as deployed (CPU-only pods: default-scheduler) on tiny"))
        .isLessThan(text.indexOf("vgpu on tiny"))
        .isLessThan(text.indexOf("vgpu as deployed (CPU-only pods: default-scheduler) on tiny"));
  }

  @Test
  void textOutputHasARowPerSeedAndTheAggregates() {
    assertThat(run(args("--policy", "bestfit"))).isZero();
    assertThat(out.toString()).contains("bestfit on tiny: 3 seed(s)").contains("\n1 ").contains("\nmedian").contains("\nmean");
  }

  @Test
  void writesAnSvgPlotWithALinePerPolicy() throws Exception {
    Path svg = dir.resolve("plot.svg");
    assertThat(run(args("--policy", "fgd,spread", "--plot", svg.toString()))).isZero();
    String text = Files.readString(svg);
    assertThat(text).startsWith("<svg").contains(">fgd</text>").contains(">spread</text>").endsWith("</svg>\n");
    // The ideal line and one per policy.
    assertThat(text.split("<polyline", -1)).hasSize(4);

    assertThat(run(args("--policy", "vgpu", "--as-deployed", "--plot", svg.toString()))).isZero();
    assertThat(Files.readString(svg)).contains(">vgpu</text>").contains(">vgpu (as deployed)</text>");
  }

  @Test
  void badInputIsOneLineWithoutAStackTrace() {
    Path missing = dir.resolve("missing.csv");
    Path badPods = write(dir, "bad.csv", POD_HEADER, pod("p1", 1000, 1, 1, 500, ""), "p2,1000,1,x,500,,LS,Running,0,1,0");
    assertError(args("--policy", "fgd,magic"), "placement-bench: --policy value 'magic' is not a policy (known: random, binpack, spread, bestfit, fgd, vgpu)");
    assertError(args("--policy", "fgd", "--seeds", "51..42"), "placement-bench: --seeds value '51..42': the range ends before it starts");
    assertError(args("--policy", "fgd", "--seeds", "4x"), "placement-bench: --seeds value '4x': '4x' is not a whole number (expected FROM..TO, a comma list, or one seed)");
    assertError(args("--policy", "fgd", "--output", "xml"), "placement-bench: --output value 'xml' is not a format (known: text, json)");
    assertError(args("--policy", "fgd", "--inflate", "lots"), "placement-bench: --inflate value 'lots' is not a ratio such as 1.3");
    assertError(
        args("--policy", "fgd", "--as-deployed", "--cpu-only-pods", "kubelet"),
        "placement-bench: --cpu-only-pods value 'kubelet' is not a mode (known: default-scheduler, policy)");
    assertError(args("--policy", "fgd", "--cpu-only-pods", "policy"), "placement-bench: --cpu-only-pods value 'policy' needs --as-deployed");
    assertError(new String[] {"--pods", pods.toString(), "--policy", "fgd"}, "placement-bench: --nodes is required");
    assertError(new String[] {"--nodes", missing.toString(), "--pods", pods.toString(), "--policy", "fgd"}, "placement-bench: nodes file '" + missing + "' does not exist");
    assertError(
        new String[] {"--nodes", nodes.toString(), "--pods", badPods.toString(), "--policy", "fgd"},
        "placement-bench: " + badPods + ":3: column 'num_gpu' value 'x' is not a non-negative whole number");
  }

  private void assertError(String[] args, String message) {
    out.getBuffer().setLength(0);
    err.getBuffer().setLength(0);
    assertThat(run(args)).isEqualTo(PlacementBenchCommand.BAD_INPUT);
    assertThat(err.toString()).isEqualTo(message + System.lineSeparator());
    assertThat(out.toString()).isEmpty();
  }

  @Test
  void theCliFindsTheSubcommandThroughServiceLoader() {
    List<SubcommandProvider> providers = ServiceLoader.load(SubcommandProvider.class).stream().map(ServiceLoader.Provider::get).toList();
    assertThat(providers).extracting(SubcommandProvider::name).contains(PlacementBenchCommand.NAME);
    Object command = providers.stream().filter(p -> p.name().equals(PlacementBenchCommand.NAME)).findFirst().orElseThrow().command();
    CommandLine parent = new CommandLine(CommandSpec.create().name("vgpu")).addSubcommand(PlacementBenchCommand.NAME, command);
    parent.setOut(new PrintWriter(out));
    assertThat(parent.execute(PlacementBenchCommand.NAME, "--help")).isZero();
    assertThat(out.toString()).contains("--nodes").contains("--policy");
  }
}
