package io.vgpu.core;

import static io.vgpu.core.Fixtures.gpu;
import static io.vgpu.core.Fixtures.node;
import static io.vgpu.core.Fixtures.pod;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicyProvider;
import io.vgpu.api.spi.PlacementView;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * The CPU the engine shows policies ({@link NodeView#freeCpuMilli()}): a node's allocatable CPU minus
 * the CPU of every pod counted on it, each pod once, whether the embedder reported it bound or the
 * engine reserved it and nobody has reported it yet.
 */
class EngineCpuTest {
  private static final List<String> NODES = List.of("n0", "n1");

  enum Kind {
    ALLOCATABLE,
    BOUND,
    GONE,
    RESERVE,
    RELEASE
  }

  record Op(Kind kind, int pod, int node, long milli) {}

  @Provide
  Arbitrary<List<Op>> scripts() {
    Arbitrary<Op> op =
        Combinators.combine(
                Arbitraries.of(Kind.class), Arbitraries.integers().between(0, 3), Arbitraries.integers().between(0, 1), Arbitraries.longs().between(0, 40_000))
            .as(Op::new);
    return op.list().ofMinSize(1).ofMaxSize(40);
  }

  /** What the engine must count for one pod. */
  private record Counted(String node, long milli, boolean assumed) {}

  @Property(tries = 300)
  void freeCpuIsAllocatableMinusEveryCountedPodOnce(@ForAll("scripts") List<Op> script) {
    Engine engine = Fixtures.engine();
    Map<String, Long> allocatable = new HashMap<>();
    for (int i = 0; i < NODES.size(); i++) {
      engine.upsertNode(node(NODES.get(i), i, 2));
    }
    Map<Integer, Counted> counted = new HashMap<>();
    Map<Integer, Boolean> held = new HashMap<>();
    for (Op op : script) {
      String node = NODES.get(op.node());
      PodRef ref = new PodRef("default", "p" + op.pod());
      switch (op.kind()) {
        case ALLOCATABLE -> {
          engine.setNodeCpu(node, op.milli());
          allocatable.put(node, op.milli());
        }
        case BOUND -> {
          engine.setPodCpu(ref, node, op.milli());
          counted.put(op.pod(), new Counted(node, op.milli(), false));
        }
        case GONE -> {
          engine.removePodCpu(ref);
          counted.remove(op.pod());
        }
        case RESERVE -> {
          PodRequest request = pod(ref.name(), gpu(1, 100, 0)).withCpuMilli(op.milli());
          Placement placement = engine.filter(engine.compile(request), List.of(node), false).placement().orElseThrow();
          if (engine.reserve(placement).reserved()) {
            held.put(op.pod(), true);
            counted.putIfAbsent(op.pod(), new Counted(node, op.milli(), true));
          } else {
            assertThat(held).containsKey(op.pod());
          }
        }
        case RELEASE -> {
          assertThat(engine.release(ref)).isEqualTo(held.remove(op.pod()) != null);
          if (counted.containsKey(op.pod()) && counted.get(op.pod()).assumed()) {
            counted.remove(op.pod());
          }
        }
      }
      for (String n : NODES) {
        long expected = -1;
        if (allocatable.containsKey(n)) {
          long used = counted.values().stream().filter(c -> c.node().equals(n)).mapToLong(Counted::milli).sum();
          expected = Math.max(0, allocatable.get(n) - used);
        }
        assertThat(engine.freeCpuMilli(n)).as("after %s, node %s", op, n).isEqualTo(expected);
      }
    }
  }

  @Test
  void policiesSeeTheNodesFreeCpuAndThePodsRequest() {
    List<String> seen = new CopyOnWriteArrayList<>();
    Engine engine = Engine.builder().loadPoliciesFromClassPath(false).policy(recording(seen)).build();
    engine.upsertNode(node("n0", 0, 2));
    engine.upsertNode(node("n1", 1, 2));
    engine.setNodeCpu("n0", 16_000);
    engine.setPodCpu(new PodRef("default", "running"), "n0", 6_000);

    PodRequest request = recorded("first", 3_000);
    Placement placement = engine.filter(engine.compile(request), List.of("n0", "n1"), false).placement().orElseThrow();
    // The winner's cards are ranked once more when the filter re-checks it.
    assertThat(seen).containsExactly("rank n0 10000", "score n0 10000 pod 3000", "rank n1 -1", "score n1 -1 pod 3000", "rank n0 10000");
    assertThat(engine.reserve(placement).reserved()).isTrue();

    seen.clear();
    engine.filter(engine.compile(recorded("second", 1_000)), List.of("n0"), false);
    assertThat(seen).containsExactly("rank n0 7000", "score n0 7000 pod 1000", "rank n0 7000");
  }

  @Test
  void aReservationCountsUntilItsPodIsReportedThenOnlyOnce() {
    Engine engine = Fixtures.engine();
    engine.upsertNode(node("n0", 0, 1));
    engine.setNodeCpu("n0", 10_000);
    PodRef ref = new PodRef("default", "p");
    Placement placement = engine.filter(engine.compile(pod("p", gpu(1, 100, 10)).withCpuMilli(4_000)), null, false).placement().orElseThrow();
    engine.reserve(placement);
    assertThat(engine.freeCpuMilli("n0")).isEqualTo(6_000);
    engine.setPodCpu(ref, "n0", 4_000); // the binding seen
    assertThat(engine.freeCpuMilli("n0")).isEqualTo(6_000);
    engine.release(ref); // init containers done: the ledger releases and restores; the pod still runs
    assertThat(engine.freeCpuMilli("n0")).isEqualTo(6_000);
    engine.removePodCpu(ref); // it finished
    assertThat(engine.freeCpuMilli("n0")).isEqualTo(10_000);
  }

  @Test
  void aPodOverTheNodesCpuLeavesNoneFreeAndAnUnknownRequestNothingCounted() {
    Engine engine = Fixtures.engine();
    engine.upsertNode(node("n0", 0, 1));
    engine.setNodeCpu("n0", 1_000);
    engine.setPodCpu(new PodRef("default", "big"), "n0", 5_000);
    assertThat(engine.freeCpuMilli("n0")).isZero();
    engine.removePodCpu(new PodRef("default", "big"));
    Fixtures.place(engine, pod("unknown", gpu(1, 100, 10)));
    assertThat(engine.freeCpuMilli("n0")).isEqualTo(1_000);
    assertThat(engine.freeCpuMilli("elsewhere")).isEqualTo(-1);
  }

  @Test
  void badCpuValuesAreRefusedNamingThem() {
    Engine engine = Fixtures.engine();
    assertThatThrownBy(() -> engine.setNodeCpu("n0", -5)).hasMessage("node n0: allocatable cpu -5 millicores is negative");
    assertThatThrownBy(() -> engine.setPodCpu(new PodRef("ns", "p"), "n0", -1)).hasMessage("pod ns/p: cpu -1 millicores is negative");
    assertThatThrownBy(() -> pod("p", gpu(1, 100, 0)).withCpuMilli(-2)).hasMessage("pod default/p: cpu -2 millicores is negative");
  }

  private static PodRequest recorded(String name, long cpuMilli) {
    return pod(name, gpu(1, 100, 10)).withOverrides(new PolicyOverrides("", "recording", ScoringWeights.DEFAULT)).withCpuMilli(cpuMilli);
  }

  /** A policy that writes down the free CPU of every node it ranks or scores, and the pod's CPU. */
  private static PlacementPolicyProvider recording(List<String> seen) {
    return IndexOrderPolicy.provider("recording", () -> new IndexOrderPolicy("recording") {
      @Override
      public void rankCards(NodeView node, CardDemand demand, int[] order) {
        seen.add("rank " + node.name() + " " + node.freeCpuMilli());
        super.rankCards(node, demand, order);
      }

      @Override
      public double scoreNode(NodeView node, PlacementView placement) {
        seen.add("score " + node.name() + " " + node.freeCpuMilli() + " pod " + placement.cpuMilli());
        return node.name().equals("n0") ? 1 : 0;
      }
    });
  }
}
