package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.policy.TargetWorkload;
import io.vgpu.core.policy.VgpuPolicy;
import io.vgpu.core.policy.WorkloadClass;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The as-deployed run drives the engine as the deployed scheduler does, under the oracle's protocol. */
class AsDeployedSimulationTest {
  private static final PreparedTrace TRACE = PreparedTrace.of(typedTrace());

  /** The synthetic trace with a third of its GPU pods insisting on T4 cards. */
  static Trace typedTrace() {
    Trace base = SyntheticTrace.sharingHeavy();
    List<TracePod> pods = new ArrayList<>();
    for (int i = 0; i < base.pods().size(); i++) {
      TracePod p = base.pods().get(i);
      pods.add(p.gpus() > 0 && i % 3 == 0 ? new TracePod(p.name(), p.cpuMilli(), p.memoryMiB(), p.gpus(), p.gpuMilli(), List.of("T4")) : p);
    }
    return new Trace("typed", base.nodes(), pods);
  }

  @Test
  void policiesThatLearnNothingPlaceExactlyAsTheirOracleRunsWhenThePolicyPlacesCpuOnlyPodsToo() {
    // Same arrivals, same tie order, same feasibility and the same policy code: only the path through
    // the engine differs, so a policy with nothing to learn must give the very same curve.
    for (String policy : List.of("bestfit", "binpack", "spread")) {
      for (long seed : List.of(1L, 2L)) {
        SeedResult oracle = Simulation.run(TRACE, PolicyCatalog.entry(policy), 1.3, seed);
        SeedResult deployed = AsDeployedSimulation.run(TRACE, policy, AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.POLICY), 1.3, seed);
        assertThat(curve(deployed)).as("%s seed %d", policy, seed).isEqualTo(curve(oracle));
        assertThat(deployed.finalAllocation()).isEqualTo(oracle.finalAllocation());
        assertThat(deployed.fragmentationAmountAt100()).isEqualTo(oracle.fragmentationAmountAt100());
      }
    }
  }

  @Test
  void theEngineLedgerAndCpuMatchWhatWasPlacedAndVgpuLearnsOnlineFromNothing() {
    List<TraceNode> nodes = TRACE.trace().nodes();
    int[] order = IntStream.range(0, nodes.size()).map(i -> nodes.size() - 1 - i).toArray();
    AsDeployedSimulation sim = new AsDeployedSimulation(nodes, "vgpu", order, TRACE.typical(), AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER));
    Engine engine = sim.engine();
    VgpuPolicy vgpu = (VgpuPolicy) engine.compile(sim.requestOf(TRACE.pods().get(0), new PodRef("bench", "probe"))).policy();
    assertThat(vgpu.workload()).isSameAs(TargetWorkload.EMPTY);
    // The cluster's types, as registered: 20 nodes of 8 G2 cards and 20 of 2 T4 cards.
    assertThat(vgpu.contention("T4")).isZero();

    long[] usedMilli = new long[nodes.size()];
    long[] cpu = nodes.stream().mapToLong(TraceNode::cpuMilli).toArray();
    int placed = 0;
    for (int p = 0; p < TRACE.pods().size(); p++) {
      TracePod pod = TRACE.pods().get(p);
      PodRef ref = AsDeployedSimulation.refOf(p, pod);
      String node = sim.schedule(pod, ref).orElse(null);
      if (node == null) {
        continue;
      }
      placed++;
      int i = indexOf(nodes, node);
      usedMilli[i] += pod.totalGpuMilli();
      cpu[i] -= pod.cpuMilli();
      if (pod.gpus() > 0) {
        // The grant is the pod's share on as many cards of an accepted model.
        assertThat(engine.grant(ref).orElseThrow().containers().get(0).devices()).hasSize(pod.gpus())
            .allSatisfy(d -> assertThat(d.memoryMiB()).isEqualTo(pod.gpuMilli() * SimCluster.MIB_PER_MILLI));
        assertThat(pod.acceptsModel(nodes.get(i).model())).isTrue();
      } else {
        assertThat(engine.grant(ref)).isEmpty();
      }
    }
    assertThat(placed).isGreaterThan(100);
    for (int i = 0; i < nodes.size(); i++) {
      NodeUsage usage = engine.usage(nodes.get(i).name()).orElseThrow();
      long memory = usage.devices().stream().mapToLong(DeviceUsage::usedMemoryMiB).sum();
      assertThat(memory).as(nodes.get(i).name()).isEqualTo(usedMilli[i] * SimCluster.MIB_PER_MILLI);
      assertThat(engine.freeCpuMilli(nodes.get(i).name())).as(nodes.get(i).name()).isEqualTo(Math.max(0, cpu[i]));
    }
    assertThat(sim.usedMilli()).isEqualTo(Arrays.stream(usedMilli).sum());

    // What vgpu learned: the placed GPU pods' shapes with their CPU, a T4-only constraint among them,
    // and contention on T4, the type a third of the pods insist on.
    Set<WorkloadClass> shapes =
        TRACE.pods().stream().filter(p -> p.gpus() > 0).map(p -> new WorkloadClass(p.cpuMilli(), PreparedTrace.demandOf(p), p.gpuSpec())).collect(Collectors.toSet());
    assertThat(vgpu.workload().classes()).isNotEmpty().allSatisfy(c -> assertThat(shapes).contains(c));
    assertThat(vgpu.workload().classes()).anySatisfy(c -> assertThat(c.cardTypes()).containsExactly("T4"));
    assertThat(vgpu.contention("T4")).isGreaterThan(0);
    assertThat(vgpu.contention("G2")).isZero();
  }

  @Test
  void cpuOnlyPodsGoWhereKubeSchedulersDefaultScoresPutThem() {
    List<TraceNode> nodes = List.of(new TraceNode("busy", 32_000, 65_536, 2, "T4"), new TraceNode("idle", 32_000, 65_536, 2, "T4"));
    TargetWorkload none = TargetWorkload.EMPTY;
    AsDeployedSimulation sim = new AsDeployedSimulation(nodes, "vgpu", new int[] {0, 1}, none, AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER));
    TracePod gpuPod = new TracePod("gpu", 16_000, 8_192, 1, 500, List.of());
    assertThat(sim.schedule(gpuPod, new PodRef("bench", "gpu"))).contains("busy"); // the first of equals
    // LeastAllocated and BalancedAllocation both prefer the idle node.
    assertThat(sim.schedule(new TracePod("cpu", 4_000, 4_096, 0, 0, List.of()), new PodRef("bench", "cpu"))).contains("idle");
    // A pod no node has the CPU for fits nowhere.
    assertThat(sim.schedule(new TracePod("huge", 40_000, 1, 0, 0, List.of()), new PodRef("bench", "huge"))).isEmpty();
    // kube-scheduler's integer arithmetic: (32000-20000)*100/32000 = 37 for CPU, 87 for memory, mean 62;
    // shares used 0.625 and 0.125 differ by 0.5, so balance scores (1 - 0.25) * 100 = 75.
    assertThat(KubeDefaultProfile.leastAllocated(20_000, 32_000, 8L << 30, 64L << 30)).isEqualTo(62);
    assertThat(KubeDefaultProfile.balancedAllocation(20_000, 32_000, 8L << 30, 64L << 30)).isEqualTo(75);
  }

  @Test
  void theRequestIsWhatTheExtenderParsesFromTheTracesPod() {
    List<TraceNode> nodes = List.of(new TraceNode("n", 32_000, 65_536, 2, "T4"));
    AsDeployedSimulation sim = new AsDeployedSimulation(nodes, "binpack", new int[] {0}, TargetWorkload.EMPTY, AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER));
    PodRequest request = sim.requestOf(new TracePod("p", 6_000, 1, 2, 470, List.of("T4", "P100")), new PodRef("bench", "p"));
    assertThat(request.containers()).singleElement().satisfies(c -> {
      assertThat(c.count()).isEqualTo(2);
      assertThat(c.memoryMiB()).isEqualTo(470 * 16);
      assertThat(c.cores()).isEqualTo(47);
    });
    assertThat(request.constraints().useTypes()).containsExactly("T4", "P100");
    assertThat(request.overrides().nodePolicy()).isEqualTo("binpack");
    assertThat(request.overrides().devicePolicy()).isEqualTo("binpack");
    assertThat(request.cpuMilli()).isEqualTo(6_000);
  }

  @Test
  void withTheChartsHundredEveryCycleHandsOnEveryFeasibleNodeInTheTieOrderOncePerPod() {
    // What the run handed the filter before kube-scheduler's sample was modelled: every node whose CPU
    // and memory fit, in the tie order, one filter per pod. A hundred must hand on exactly that.
    Trace trace = SyntheticTrace.wide();
    for (AsDeployedSimulation.CpuOnlyPods mode : AsDeployedSimulation.CpuOnlyPods.values()) {
      int[] order = IntStream.range(0, trace.nodes().size()).map(i -> (i * 7) % trace.nodes().size()).toArray();
      AsDeployedSimulation sim = new AsDeployedSimulation(trace.nodes(), "binpack", order, TargetWorkload.EMPTY, AsDeployedSimulation.Setup.chart(mode));
      List<String> cycles = new ArrayList<>();
      sim.onCycle((pod, nodes) -> {
        assertThat(nodes).as("%s, %s", mode, pod.name()).isEqualTo(sim.feasible(pod));
        cycles.add(pod.name());
      });
      int refused = 0;
      for (int p = 0; p < trace.pods().size(); p++) {
        refused += sim.schedule(trace.pods().get(p), AsDeployedSimulation.refOf(p, trace.pods().get(p))).isEmpty() ? 1 : 0;
      }
      assertThat(cycles).as("one cycle per pod").containsExactlyElementsOf(trace.pods().stream().map(TracePod::name).toList());
      assertThat(refused).as("the cluster fills up, so some pods fit nowhere").isPositive();
    }
  }

  @Test
  void aTenthSampleHandsOnAHundredFeasibleNodesEachCycleFromWhereTheLastStopped() {
    Trace trace = SyntheticTrace.wide();
    List<TraceNode> nodes = trace.nodes();
    int n = nodes.size();
    int[] order = IntStream.range(0, n).toArray();
    AsDeployedSimulation sim =
        new AsDeployedSimulation(nodes, "binpack", order, TargetWorkload.EMPTY, new AsDeployedSimulation.Setup(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER, 10));
    // Where each kube-scheduler's next cycle starts: the chart's, for GPU pods, and the cluster's own,
    // for CPU-only ones.
    int[] nextStart = {0, 0};
    int[] cycles = new int[2];
    sim.onCycle((pod, handedOn) -> {
      int scheduler = pod.gpus() == 0 ? 1 : 0;
      cycles[scheduler]++;
      List<String> feasible = sim.feasible(pod);
      assertThat(handedOn).as(pod.name()).hasSize(Math.min(100, feasible.size()));
      if (handedOn.isEmpty()) {
        return;
      }
      // From where the cycle started, in the tie order, the nodes that did not fit left out.
      int at = nextStart[scheduler];
      for (String node : handedOn) {
        while (!nodes.get(at).name().equals(node)) {
          assertThat(feasible).as("%s: %s was looked at", pod.name(), nodes.get(at).name()).doesNotContain(nodes.get(at).name());
          at = (at + 1) % n;
        }
        at = (at + 1) % n;
      }
      assertThat(feasible).as(pod.name()).containsAll(handedOn);
      // A cycle that found fewer than its hundred looked at every node and leaves the start where it was.
      if (handedOn.size() == 100) {
        nextStart[scheduler] = at;
      }
    });
    for (int p = 0; p < trace.pods().size(); p++) {
      sim.schedule(trace.pods().get(p), AsDeployedSimulation.refOf(p, trace.pods().get(p)));
    }
    long cpuOnly = trace.pods().stream().filter(p -> p.gpus() == 0).count();
    assertThat(cycles[0]).as("cycles for GPU pods: one at least each, more for some").isGreaterThan((int) (trace.pods().size() - cpuOnly));
    assertThat(cycles[1]).as("cycles for CPU-only pods: one each").isEqualTo(cpuOnly);
  }

  @Test
  void aPodItsSampleCannotPlaceIsTriedOnTheNextSampleUntilEveryNodeWasOffered() {
    // 150 nodes of T4 cards and one of A100 cards at the end of the tie order.
    List<TraceNode> nodes = new ArrayList<>();
    for (int i = 0; i < 150; i++) {
      nodes.add(new TraceNode(String.format("node-%03d", i), 32_000, 65_536, 1, i == 149 ? "A100" : "T4"));
    }
    int[] order = IntStream.range(0, nodes.size()).toArray();
    AsDeployedSimulation sim =
        new AsDeployedSimulation(nodes, "binpack", order, TargetWorkload.EMPTY, new AsDeployedSimulation.Setup(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER, 10));
    List<List<String>> cycles = new ArrayList<>();
    sim.onCycle((pod, handedOn) -> cycles.add(handedOn));

    // Nodes 0..99 first, where no A100 is; then 100..149 and 0..49, where node-149 is.
    TracePod a100 = new TracePod("a100", 1_000, 1_024, 1, 1000, List.of("A100"));
    assertThat(sim.schedule(a100, new PodRef("bench", "a100"))).contains("node-149");
    assertThat(cycles).hasSize(2);
    assertThat(cycles.get(0)).hasSize(100).startsWith("node-000").endsWith("node-099");
    assertThat(cycles.get(1)).hasSize(100).startsWith("node-100", "node-101").endsWith("node-049");

    // Another fits nowhere: refused once the cycles have offered all 150 nodes (50..149, then 0..99).
    cycles.clear();
    assertThat(sim.schedule(a100, new PodRef("bench", "a100-again"))).isEmpty();
    assertThat(cycles).hasSize(2);
    assertThat(cycles.get(0)).startsWith("node-050").endsWith("node-149");
    assertThat(cycles.get(1)).startsWith("node-000").endsWith("node-099");

    // With the chart's 100 both are decided in one cycle each.
    AsDeployedSimulation chart = new AsDeployedSimulation(nodes, "binpack", order, TargetWorkload.EMPTY, AsDeployedSimulation.Setup.chart(AsDeployedSimulation.CpuOnlyPods.DEFAULT_SCHEDULER));
    cycles.clear();
    chart.onCycle((pod, handedOn) -> cycles.add(handedOn));
    assertThat(chart.schedule(a100, new PodRef("bench", "a100"))).contains("node-149");
    assertThat(chart.schedule(a100, new PodRef("bench", "a100-again"))).isEmpty();
    assertThat(cycles).hasSize(2).allSatisfy(c -> assertThat(c).hasSize(150));
  }

  private static List<Double> curve(SeedResult result) {
    List<Double> out = new ArrayList<>();
    for (int x = 0; x <= SeedResult.LAST_PERCENT; x++) {
      out.add(result.unallocatedAt(x));
    }
    return out;
  }

  private static int indexOf(List<TraceNode> nodes, String name) {
    for (int i = 0; i < nodes.size(); i++) {
      if (nodes.get(i).name().equals(name)) {
        return i;
      }
    }
    throw new AssertionError(name);
  }
}
