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
    assertThat(deployed.propertyNames()).containsExactly("cpuOnlyPods", "percentageOfNodesToScore", "feasibleNodesToFind", "seeds", "median", "mean");
    assertThat(deployed.get("cpuOnlyPods").asString()).isEqualTo("default-scheduler");
    // The chart's 100; six nodes are under kube-scheduler's 100, so every one is looked at.
    assertThat(deployed.get("percentageOfNodesToScore").asInt()).isEqualTo(100);
    assertThat(deployed.get("feasibleNodesToFind").asInt()).isEqualTo(6);
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
    String asDeployed = " as deployed (CPU-only pods: default-scheduler; percentageOfNodesToScore 100: 6 feasible of 6 nodes) on tiny";
    assertThat(text.indexOf("bestfit on tiny"))
        .isGreaterThanOrEqualTo(0)
        .isLessThan(text.indexOf("bestfit" + asDeployed))
        .isLessThan(text.indexOf("vgpu on tiny"))
        .isLessThan(text.indexOf("vgpu" + asDeployed));
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
    assertError(
        args("--policy", "fgd", "--as-deployed", "--percentage-of-nodes-to-score", "101"),
        "placement-bench: --percentage-of-nodes-to-score value '101' is not a whole number from 0 to 100 (0: kube-scheduler's adaptive share)");
    assertError(
        args("--policy", "fgd", "--as-deployed", "--percentage-of-nodes-to-score", "-5"),
        "placement-bench: --percentage-of-nodes-to-score value '-5' is not a whole number from 0 to 100 (0: kube-scheduler's adaptive share)");
    assertError(
        args("--policy", "fgd", "--as-deployed", "--percentage-of-nodes-to-score", "10%"),
        "placement-bench: --percentage-of-nodes-to-score value '10%' is not a whole number from 0 to 100 (0: kube-scheduler's adaptive share)");
    assertError(
        args("--policy", "fgd", "--percentage-of-nodes-to-score", "10"), "placement-bench: --percentage-of-nodes-to-score value '10' needs --as-deployed");
    assertError(
        args("--policy", "fgd", "--percentage-of-nodes-to-score", "100"), "placement-bench: --percentage-of-nodes-to-score value '100' needs --as-deployed");
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

  /**
   * 250 nodes, so that kube-scheduler's share bites (10 % of 250 is under its floor: 100 nodes), a
   * fifth of them with four cards and the rest with one; shares, whole cards, pairs and CPU-only pods.
   */
  private String[] largeClusterArgs(String... extra) {
    List<String> nodeRows = new ArrayList<>(List.of(NODE_HEADER));
    IntStream.range(0, 250).forEach(i -> nodeRows.add(String.format("node-%03d,32000,131072,%d,T4", i, i % 5 == 0 ? 4 : 1)));
    Path largeNodes = write(dir, "nodes-250.csv", nodeRows.toArray(String[]::new));
    List<String> podRows = new ArrayList<>(List.of(POD_HEADER));
    int[] shares = {1000, 500, 300, 1000, 0, 700, 250, 1000};
    IntStream.range(0, 200)
        .forEach(i -> podRows.add(pod("pod-" + i, 2000 + 1000L * (i % 7), 4096, shares[i % 8] == 0 ? 0 : i % 11 == 0 ? 2 : 1, shares[i % 8], "")));
    Path largePods = write(dir, "large.csv", podRows.toArray(String[]::new));
    List<String> all = new ArrayList<>(List.of("--nodes", largeNodes.toString(), "--pods", largePods.toString(), "--threads", "2", "--seeds", "1..2"));
    all.addAll(List.of(extra));
    return all.toArray(String[]::new);
  }

  private JsonNode asDeployedJson(String... extra) throws Exception {
    out.getBuffer().setLength(0);
    List<String> all = new ArrayList<>(List.of("--policy", "binpack", "--as-deployed", "--output", "json"));
    all.addAll(List.of(extra));
    assertThat(run(largeClusterArgs(all.toArray(String[]::new)))).as(err.toString()).isZero();
    return new ObjectMapper().readTree(out.toString()).get("asDeployed");
  }

  /** Each seed's unallocated GPU % by arrived %, which is what the runs are compared by. */
  private static List<String> curves(JsonNode asDeployed) {
    List<String> curves = new ArrayList<>();
    asDeployed.get("seeds").forEach(seed -> curves.add(seed.get("seed").asLong() + ": " + seed.get("curve") + " final " + seed.get("finalAllocation")));
    return curves;
  }

  @Test
  void aSampleOfTheNodesIsReportedAndChangesWherePodsGo() throws Exception {
    JsonNode chart = asDeployedJson();
    JsonNode all = asDeployedJson("--percentage-of-nodes-to-score", "100");
    JsonNode adaptive = asDeployedJson("--percentage-of-nodes-to-score", "0");
    JsonNode tenth = asDeployedJson("--percentage-of-nodes-to-score", "10");

    assertThat(chart.get("percentageOfNodesToScore").asInt()).isEqualTo(100);
    assertThat(chart.get("feasibleNodesToFind").asInt()).isEqualTo(250);
    assertThat(adaptive.get("percentageOfNodesToScore").asInt()).isZero();
    assertThat(adaptive.get("feasibleNodesToFind").asInt()).isEqualTo(120); // 50 - 250/125 = 48 %
    assertThat(tenth.get("percentageOfNodesToScore").asInt()).isEqualTo(10);
    assertThat(tenth.get("feasibleNodesToFind").asInt()).isEqualTo(100); // 25, raised to kube-scheduler's floor

    // The default is the chart's 100; a sample of the nodes places the pods elsewhere.
    assertThat(curves(all)).isEqualTo(curves(chart));
    assertThat(curves(tenth)).isNotEqualTo(curves(all));
    assertThat(curves(adaptive)).isNotEqualTo(curves(all));

    out.getBuffer().setLength(0);
    assertThat(run(largeClusterArgs("--policy", "binpack", "--as-deployed", "--percentage-of-nodes-to-score", "0"))).isZero();
    assertThat(out.toString()).contains("binpack as deployed (CPU-only pods: default-scheduler; percentageOfNodesToScore 0 (adaptive): 120 feasible of 250 nodes) on large");
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
