package io.vgpu.k8s.cli;

import static io.vgpu.k8s.cli.Run.vgpu;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimulateCommandTest {
  @TempDir Path temp;

  private static String resource(String name) {
    try {
      return Path.of(SimulateCommandTest.class.getResource("/" + name).toURI()).toString();
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String golden(String name) {
    try {
      return Files.readString(Path.of(resource("golden/" + name)));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private Path scenario(String yaml) throws IOException {
    Path file = temp.resolve("s.yaml");
    Files.writeString(file, yaml);
    return file;
  }

  @Test
  void printsTheGoldenJsonOfAScenarioWithEveryKindOfOutcome() {
    Run run = vgpu("simulate", resource("scenarios/basic.yaml"), "--output", "json");
    assertThat(run.err()).isEmpty();
    assertThat(run.code()).isZero();
    assertThat(run.out()).isEqualTo(golden("basic.json"));
  }

  @Test
  void warnsOnStandardErrorOfAGpuNodeTheChartsNodeAgentWouldNotRunOn() throws IOException {
    Path file = scenario("""
        nodes:
          - {name: labelled, labels: {gpu: "on"}, gpus: {profile: A100-SXM4-40GB, count: 1}}
          - {name: unlabelled, labels: {gpu: "off"}, gpus: {profile: A100-SXM4-40GB, count: 1, uuidPrefix: GPU-b}}
          - {name: cpu-only}
        events:
          - create: {metadata: {name: p}, spec: {nodeSelector: {kubernetes.io/hostname: unlabelled}, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}
        """);
    Run run = vgpu("simulate", file.toString(), "--output", "json");

    assertThat(run.code()).isZero();
    assertThat(run.err()).isEqualTo("vgpu: warning: node unlabelled has GPUs but not the label gpu=on that the chart's node agent DaemonSet selects"
        + " (devicePlugin.nvidiaNodeSelector): in a cluster its GPUs never register, while simulate places pods on them\n");
    assertThat(run.out()).contains("\"node\": \"unlabelled\"");
  }

  @Test
  void explainsWhatACardLacksAndWhoHoldsIt() {
    Run run = vgpu("simulate", resource("scenarios/explain-memory.yaml"), "--output", "json", "--explain", "p2");
    assertThat(run.code()).isZero();
    assertThat(run.out()).isEqualTo(golden("explain-memory.json"));
  }

  @Test
  void explainsTheCheapestFixAcrossNodes() {
    Run run = vgpu("simulate", resource("scenarios/explain-nearest.yaml"), "--output", "json", "--explain", "default/p4");
    assertThat(run.code()).isZero();
    assertThat(run.out()).isEqualTo(golden("explain-nearest.json"));
  }

  @Test
  void explainsAFittingPodWithTheCardsItWouldGet() throws IOException {
    Run run = vgpu("simulate", resource("scenarios/explain-memory.yaml"), "--output", "json", "--explain", "p1");
    assertThat(run.out())
        .contains("\"pod\": \"default/p1\"")
        .contains("\"phase\": \"Running\"")
        .contains("\"fits\": true")
        .contains("\"uuid\": \"GPU-00000000-0000-0000-0000-000000000000\",\n          \"memoryMiB\": 4096")
        .doesNotContain("nearest");
  }

  @Test
  void printsReadableTablesByDefault() {
    Run run = vgpu("simulate", resource("scenarios/basic.yaml"));
    assertThat(run.code()).isZero();
    assertThat(run.out())
        .startsWith("PODS\nNAMESPACE  NAME  PHASE     NODE     DETAILS\n")
        .contains("ml         p2    Running   worker2  train: GPU-t4-0 7680 MiB 0 cores\n")
        .contains("default    p4    Pending   -        worker1: NodeSelectorMismatch; worker2: NodeInsufficientDevice; cpu1: NodeSelectorMismatch\n")
        .contains("default    p5    Rejected  -        pod has node assigned (spec.nodeName: worker1)\n")
        .contains("\nTIMELINE\nSTEP  EVENT               SCHEDULED\n0     create default/p1   default/p1\n")
        .contains("worker2  GPU-t4-0                                  NVIDIA-Tesla T4        7680/15360  0/100  1/4      ok\n")
        .contains("cpu1     -                                         -                      -           -      -        no GPU registered\n");
  }

  @Test
  void explainsInTables() {
    Run run = vgpu("simulate", resource("scenarios/explain-nearest.yaml"), "--explain", "p4");
    assertThat(run.out())
        .isEqualTo(
            """
            POD default/p4 (Pending)

            NODE worker1: 1/1 CardTimeSlicingExhausted
              CARD                                      FAILS                     SHORT BY   HELD BY
              GPU-00000000-0000-0000-0000-000000000000  CardTimeSlicingExhausted  1 sharers  default/p1, default/p2

            NODE worker2: 1/1 CardInsufficientCore
              CARD                                      FAILS                 SHORT BY  HELD BY
              GPU-00000001-0000-0000-0000-000000000000  CardInsufficientCore  10 cores  default/p3

            NEAREST worker2: free 10 cores on GPU-00000001-0000-0000-0000-000000000000 (held by default/p3)
            """);
  }

  @Test
  void anUnknownKeyIsOneLineWithItsPositionAndExitCode2() throws IOException {
    Path file = scenario("nodes:\n  - name: w\n    gpu: {profile: T4}\n");
    Run run = vgpu("simulate", file.toString());
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.out()).isEmpty();
    assertThat(run.err()).isEqualTo("vgpu: " + file + ":3:5: unknown key 'gpu' in nodes[0] (known keys: name, labels, annotations, gpus, devices)\n");
  }

  @Test
  void aMalformedQuantityIsOneLineNamingFieldValueAndPosition() throws IOException {
    Path file =
        scenario(
            "nodes: [{name: w, gpus: {profile: T4}}]\nevents:\n  - create:\n      metadata: {name: p}\n"
                + "      spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: 4Zi}}}]}\n");
    Run run = vgpu("simulate", file.toString());
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err())
        .isEqualTo("vgpu: " + file + ":5:77: events[0].create.spec.containers[0].resources.limits.nvidia.com/gpumem: '4Zi' is not a valid quantity\n");
  }

  @Test
  void anUnknownProfileIsOneLineListingTheKnownOnes() throws IOException {
    Path file = scenario("nodes: [{name: w, gpus: {profile: A200}}]\n");
    Run run = vgpu("simulate", file.toString());
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).startsWith("vgpu: " + file + ":1:35: nodes[0].gpus.profile: unknown GPU profile 'A200' (known: A100-SXM4-40GB,");
    assertThat(run.err().lines()).hasSize(1);
  }

  @Test
  void aMissingFileOrPodIsOneLine() throws IOException {
    Run missing = vgpu("simulate", temp.resolve("nope.yaml").toString());
    assertThat(missing.code()).isEqualTo(2);
    assertThat(missing.err()).isEqualTo("vgpu: " + temp.resolve("nope.yaml") + ": no such file\n");
    Run unknownPod = vgpu("simulate", resource("scenarios/basic.yaml"), "--explain", "ghost");
    assertThat(unknownPod.code()).isEqualTo(2);
    assertThat(unknownPod.err()).isEqualTo("vgpu: --explain: pod default/ghost is not in the scenario's final state\n");
  }

  @Test
  void aBadPodFieldIsOneLineAtThatField() throws IOException {
    Path file = scenario("events:\n  - create:\n      metadata: {name: p}\n      spec: {containers: 5}\n");
    Run run = vgpu("simulate", file.toString());
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err()).startsWith("vgpu: " + file + ":4:26: events[0].create.spec.containers: not a valid Pod field: ");
    assertThat(run.err().lines()).hasSize(1);
  }

  @Test
  void usageErrorsAreOneLineWithPicocliUsageCode() {
    Run run = vgpu("simulate", resource("scenarios/basic.yaml"), "--output", "xml");
    assertThat(run.code()).isEqualTo(2);
    assertThat(run.err().lines()).hasSize(1);
    assertThat(run.err()).startsWith("vgpu: Invalid value for option '--output'").endsWith("(see 'vgpu simulate --help')\n");
  }

  @Test
  void internalErrorsAreOneLineUnlessDebugging() {
    Run run = vgpu("fail");
    assertThat(run.code()).isEqualTo(1);
    assertThat(run.err()).isEqualTo("vgpu: internal error: java.lang.IllegalStateException: the ledger is on fire (run with --debug for details)\n");
    Run debug = vgpu("fail", "--debug");
    assertThat(debug.err()).contains("\tat io.vgpu.k8s.cli.FailingSubcommandProvider$Fail.call");
  }

  @Test
  void listsSubcommandsFromOtherModules() {
    Run run = vgpu("--help");
    assertThat(run.code()).isZero();
    assertThat(run.out()).contains("simulate").contains("fail");
  }
}
