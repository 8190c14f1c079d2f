package io.vgpu.k8s.simulate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.ContainerContract;
import io.vgpu.api.spi.ContainerContractProvider;
import io.vgpu.api.spi.ContractSettings;
import java.util.function.Function;
import io.vgpu.core.Engine;
import io.vgpu.k8s.simulate.SimulationResult.PodOutcome;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlReader;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class SimulatorTest {
  private static final String ONE_NODE = "nodes:\n  - {name: w1, gpus: {profile: A100-SXM4-40GB, count: 1}}\n";
  private static final String TWO_NODES = "nodes:\n  - {name: w1, gpus: {profile: A100-SXM4-40GB, count: 1}}\n  - {name: w2, gpus: {profile: A100-SXM4-40GB, count: 1}}\n";
  private static final String CARD_W1 = "GPU-00000000-0000-0000-0000-000000000000";

  private static Simulator simulator(String yaml) {
    return simulator(yaml, (ContainerContract) null);
  }

  private static Simulator simulator(String yaml, ContainerContract contract) {
    return simulator(yaml, contract == null ? null : settings -> contract);
  }

  private static Simulator simulator(String yaml, Function<ContractSettings, ContainerContract> contracts) {
    Scenario scenario = new ScenarioParser(Set.of()).parse(YamlReader.read(yaml, "s.yaml"));
    ContainerContractProvider provider =
        contracts == null
            ? null
            : new ContainerContractProvider() {
              @Override
              public String vendor() {
                return "NVIDIA";
              }

              @Override
              public ContainerContract create(ContractSettings settings) {
                return contracts.apply(settings);
              }
            };
    return new Simulator(scenario, () -> Engine.builder().loadPoliciesFromClassPath(false), provider);
  }

  private static SimulationResult replay(String yaml) {
    return simulator(yaml).replay();
  }

  private static String create(String name, String limits) {
    return create(name, "", limits);
  }

  private static String create(String name, String extraMetadata, String limits) {
    return "  - create: {metadata: {name: " + name + extraMetadata + "}, spec: {containers: [{name: c, resources: {limits: {" + limits + "}}}]}}\n";
  }

  private static PodOutcome pod(SimulationResult r, String name) {
    return r.pods().stream().filter(p -> p.pod().name().equals(name)).findFirst().orElseThrow();
  }

  @Test
  void retriesPendingPodsInCreationOrderAfterADelete() {
    SimulationResult r =
        replay(
            ONE_NODE
                + "events:\n"
                + create("big", "nvidia.com/gpu: 1, nvidia.com/gpumem: 30000")
                + create("first", "nvidia.com/gpu: 1, nvidia.com/gpumem: 25000")
                + create("second", "nvidia.com/gpu: 1, nvidia.com/gpumem: 25000")
                + "  - delete: big\n");
    assertThat(pod(r, "first").phase()).isEqualTo(Phase.RUNNING);
    assertThat(pod(r, "second").phase()).isEqualTo(Phase.PENDING);
    assertThat(pod(r, "second").reasons()).containsExactly(Map.entry("w1", "1/1 CardInsufficientMemory"));
    assertThat(r.timeline().get(3).scheduled()).containsExactly(new PodRef("default", "first"));
    assertThat(r.pods()).extracting(p -> p.pod().name()).containsExactly("first", "second");
  }

  @Test
  void aRejectedPodMayBeSubmittedAgainButARunningOneMayNot() {
    SimulationResult r =
        replay(
            ONE_NODE
                + "events:\n"
                + "  - create: {metadata: {name: p}, spec: {nodeName: w1, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n"
                + create("other", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1")
                + create("p", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1"));
    assertThat(r.pods()).extracting(p -> p.pod().name() + ":" + p.phase()).containsExactly("other:RUNNING", "p:RUNNING");
    Simulator twice = simulator(ONE_NODE + "events:\n" + create("p", "nvidia.com/gpu: 1") + create("p", "nvidia.com/gpu: 1"));
    assertThatThrownBy(twice::replay).isInstanceOf(InputException.class).hasMessage("s.yaml:5:5: create: pod default/p already exists");
    Simulator ghost = simulator(ONE_NODE + "events:\n  - delete: ghost\n");
    assertThatThrownBy(ghost::replay).hasMessage("s.yaml:4:5: delete: pod default/ghost does not exist");
  }

  @Test
  void aPatchChangesNothingButNeedsAPodThatExists() {
    String events = ONE_NODE + "events:\n" + create("p", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000");
    SimulationResult plain = replay(events);
    SimulationResult patched = replay(events + "  - patch: {pod: p, metadata: {annotations: {hami.io/vgpu-devices-allocated: 'GPU-x,NVIDIA,40960,100:;'}}}\n");
    assertThat(pod(patched, "p").node()).isEqualTo(pod(plain, "p").node());
    assertThat(pod(patched, "p").containers()).isEqualTo(pod(plain, "p").containers());
    assertThat(patched.timeline().get(1).event()).isEqualTo("patch default/p as tenant");
    assertThat(patched.timeline().get(1).scheduled()).isEmpty();
    Simulator ghost = simulator(ONE_NODE + "events:\n  - patch: {pod: ghost, metadata: {labels: {a: b}}}\n");
    assertThatThrownBy(ghost::replay).hasMessage("s.yaml:4:5: patch: pod default/ghost does not exist");
  }

  @Test
  void aPolicyChangeRebuildsTheSchedulerAndKeepsUsage() {
    SimulationResult r =
        replay(
            TWO_NODES
                + "events:\n"
                + create("a", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000")
                + create("b", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000")
                + "  - setConfig: {nodeSchedulerPolicy: spread}\n"
                + create("c", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000"));
    assertThat(List.of(pod(r, "a").node(), pod(r, "b").node(), pod(r, "c").node())).containsExactly("w1", "w1", "w2");
    assertThat(r.nodes().get(0).devices().get(0).usage().usedMemoryMiB()).isEqualTo(2000);
  }

  @Test
  void shrinkingTheSplitCountKeepsRunningPodsAndBlocksNewOnes() {
    SimulationResult r =
        replay(
            ONE_NODE
                + "events:\n"
                + create("a", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000")
                + create("b", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000")
                + "  - setConfig: {deviceSplitCount: 1}\n"
                + create("c", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000"));
    assertThat(pod(r, "b").phase()).isEqualTo(Phase.RUNNING);
    assertThat(pod(r, "c").reasons()).containsExactly(Map.entry("w1", "1/1 CardTimeSlicingExhausted"));
    assertThat(r.nodes().get(0).devices().get(0).usage().sharers()).isEqualTo(2);
    assertThat(r.nodes().get(0).devices().get(0).usage().device().splitCount()).isEqualTo(1);
  }

  @Test
  void capacityThatOverflowsAfterScalingIsAnInputError() {
    assertThatThrownBy(() -> simulator("config: {deviceMemoryScaling: 100000}\n" + ONE_NODE))
        .isInstanceOf(InputException.class)
        .hasMessage("s.yaml:3:5: node w1: device GPU-00000000-0000-0000-0000-000000000000: 40960 MiB x deviceMemoryScaling 100000.0 overflows");
  }

  @Test
  void cordonedUnhealthyAndGpulessNodesSayWhy() {
    SimulationResult r =
        replay(
            "nodes:\n"
                + "  - {name: cordoned, annotations: {hami.io/device-cordon: GPU-c}, devices: [{uuid: GPU-c, model: NVIDIA L4, memoryMiB: 23034}]}\n"
                + "  - {name: sick, devices: [{uuid: GPU-s, model: NVIDIA L4, memoryMiB: 23034, health: false}]}\n"
                + "  - {name: cpu}\n"
                + "events:\n"
                + create("p", "nvidia.com/gpu: 1"));
    assertThat(pod(r, "p").reasons())
        .containsExactly(Map.entry("cordoned", "1/1 CardCordoned"), Map.entry("sick", "1/1 CardNotHealth"), Map.entry("cpu", "node unregistered"));
  }

  @Test
  void podsTheSchedulerCannotEvaluateWaitWithAMessage() {
    SimulationResult r =
        replay(
            ONE_NODE
                + "events:\n"
                + create("weights", ", annotations: {hami.io/device-scoring-weights: \"slot=1\"}", "nvidia.com/gpu: 1")
                + "  - create: {metadata: {name: volcano}, spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n");
    assertThat(pod(r, "weights").phase()).isEqualTo(Phase.PENDING);
    assertThat(pod(r, "weights").reasons()).isEmpty();
    assertThat(pod(r, "weights").message())
        .isEqualTo("invalid hami.io/device-scoring-weights annotation \"slot=1\": expected slot, core, and memory weights");
    assertThat(pod(r, "volcano").message()).isEqualTo("spec.schedulerName is volcano: the pod is left to that scheduler");
  }

  @Test
  void podsWithoutGpusRunOnTheFirstNodeTheirSelectionAllows() {
    SimulationResult r =
        replay(
            TWO_NODES
                + "events:\n"
                + "  - create: {metadata: {name: any}, spec: {containers: [{name: c}]}}\n"
                + "  - create: {metadata: {name: second}, spec: {nodeSelector: {kubernetes.io/hostname: w2}, containers: [{name: c}]}}\n"
                + "  - create: {metadata: {name: none}, spec: {nodeSelector: {disk: ssd}, containers: [{name: c}]}}\n"
                + "  - create: {metadata: {name: bound}, spec: {nodeName: w2, containers: [{name: c}]}}\n");
    assertThat(pod(r, "any").node()).isEqualTo("w1");
    assertThat(pod(r, "any").annotations()).isEmpty();
    assertThat(pod(r, "second").node()).isEqualTo("w2");
    assertThat(pod(r, "none").reasons()).containsExactly(Map.entry("w1", "NodeSelectorMismatch"), Map.entry("w2", "NodeSelectorMismatch"));
    assertThat(pod(r, "bound").node()).isEqualTo("w2");
  }

  @Test
  void honoursRequiredNodeAffinity() {
    SimulationResult r =
        replay(
            TWO_NODES
                + "events:\n"
                + "  - create:\n      metadata: {name: p}\n      spec:\n"
                + "        affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: NotIn, values: [w1]}]}]}}}\n"
                + "        containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n");
    assertThat(pod(r, "p").node()).isEqualTo("w2");
  }

  @Test
  void initContainersComeFirstInTheAnnotationAndCountAsTheirPeak() {
    SimulationResult r =
        replay(
            ONE_NODE
                + "events:\n"
                + "  - create:\n      metadata: {name: p}\n      spec:\n"
                + "        initContainers:\n"
                + "          - {name: i1, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 10000, nvidia.com/gpucores: 10}}}\n"
                + "          - {name: i2}\n"
                + "        containers:\n"
                + "          - {name: a, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 3000, nvidia.com/gpucores: 5}}}\n"
                + "          - {name: b}\n");
    PodOutcome p = pod(r, "p");
    assertThat(p.annotations().get("hami.io/vgpu-devices-allocated"))
        .isEqualTo(CARD_W1 + ",NVIDIA,10000,10:;;" + CARD_W1 + ",NVIDIA,3000,5:;;");
    assertThat(p.initContainers()).extracting(c -> c.name()).containsExactly("i1", "i2");
    assertThat(r.nodes().get(0).devices().get(0).usage().usedMemoryMiB()).isEqualTo(10000);
    assertThat(r.nodes().get(0).devices().get(0).usage().usedCores()).isEqualTo(10);
  }

  @Test
  void addsTheContainerContractsEnvironmentWhenOneIsInstalled() {
    ContainerContract contract =
        (pod, uid, grant, env) ->
            new ContainerContract.Allocation(
                Map.of("NVIDIA_VISIBLE_DEVICES", grant.devices().stream().map(DeviceGrant::uuid).collect(Collectors.joining(",")), "FROM_MANIFEST", env.getOrDefault("A", "")),
                List.of(),
                List.of());
    SimulationResult r =
        simulator(
                ONE_NODE + "events:\n  - create: {metadata: {name: p}, spec: {containers: [{name: c, env: [{name: A, value: x}], resources: {limits: {nvidia.com/gpu: 1}}}, {name: cpu}]}}\n",
                contract)
            .replay();
    assertThat(pod(r, "p").containers().get(0).env()).containsEntry("NVIDIA_VISIBLE_DEVICES", CARD_W1).containsEntry("FROM_MANIFEST", "x");
    assertThat(pod(r, "p").containers().get(1).env()).isEmpty();
  }

  @Test
  void eachPodGetsTheContractOfTheConfigurationInForceWhenItWasPlaced() {
    Function<ContractSettings, ContainerContract> contracts =
        settings ->
            (pod, uid, grant, env) ->
                new ContainerContract.Allocation(
                    Map.of("LOG", settings.libCudaLogLevel(), "OVERSUBSCRIBED", Boolean.toString(settings.memoryOversubscribed())), List.of(), List.of());
    String gpu = "resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}}";
    Simulator simulator =
        simulator(
            ONE_NODE
                + "events:\n"
                + "  - create: {metadata: {name: before}, spec: {containers: [{name: c, " + gpu + "}]}}\n"
                + "  - setConfig: {libCudaLogLevel: 4, deviceMemoryScaling: 2}\n"
                + "  - create: {metadata: {name: after}, spec: {containers: [{name: c, " + gpu + "}]}}\n",
            contracts);
    SimulationResult r = simulator.replay();
    assertThat(pod(r, "before").containers().get(0).env()).containsEntry("LOG", "1").containsEntry("OVERSUBSCRIBED", "false");
    assertThat(pod(r, "after").containers().get(0).env()).containsEntry("LOG", "4").containsEntry("OVERSUBSCRIBED", "true");
    assertThat(simulator.allocation(new PodRef("default", "after"), "c")).get().extracting(a -> a.env().get("LOG")).isEqualTo("4");
    assertThat(simulator.allocation(new PodRef("default", "after"), "missing")).isEmpty();
  }

  @Test
  void aContainerValueTheContractRefusesIsAnInputError() {
    ContainerContract refusing =
        (pod, uid, grant, env) -> {
          throw new IllegalArgumentException("pod " + pod + " container " + grant.name() + ": env X='y' is bad");
        };
    assertThatThrownBy(() -> simulator(ONE_NODE + "events:\n  - create: {metadata: {name: p}, spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n", refusing).replay())
        .isInstanceOf(InputException.class)
        .hasMessage("pod default/p container c: env X='y' is bad");
  }

  @Test
  void explainsRejectedAndGpulessPodsAndLeavesTheLedgerAsItWas() {
    Simulator s =
        simulator(
            TWO_NODES
                + "events:\n"
                + "  - create: {metadata: {name: priv}, spec: {containers: [{name: c, securityContext: {privileged: true}, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n"
                + "  - create: {metadata: {name: web}, spec: {nodeSelector: {kubernetes.io/hostname: w2}, containers: [{name: c}]}}\n"
                + create("gpu", "nvidia.com/gpu: 1, nvidia.com/gpumem: 1000"));
    SimulationResult before = s.replay();
    PodExplanation rejected = s.explain(new PodRef("default", "priv"));
    assertThat(rejected.phase()).isEqualTo(Phase.REJECTED);
    assertThat(rejected.message()).isEqualTo("container c is privileged");
    PodExplanation web = s.explain(new PodRef("default", "web"));
    assertThat(web.nodes()).extracting(PodExplanation.NodeVerdict::fits).containsExactly(false, true);
    assertThat(web.nodes().get(0).reason()).isEqualTo("NodeSelectorMismatch");
    PodExplanation gpu = s.explain(new PodRef("default", "gpu"));
    assertThat(gpu.nodes()).allMatch(PodExplanation.NodeVerdict::fits);
    assertThat(gpu.nearest()).isEmpty();
    assertThat(s.explain(new PodRef("default", "gpu")).nodes().get(0).chosen()).hasSize(1);
    assertThat(before.nodes().get(0).devices().get(0).usage().usedMemoryMiB()).isEqualTo(1000);
  }
}
