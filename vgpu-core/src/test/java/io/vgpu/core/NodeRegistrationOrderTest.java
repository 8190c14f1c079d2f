package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The engine's node list is the registered nodes in the order they registered, whatever mix of
 * registrations, re-registrations (new capacity) and removals came before: a node that registers goes
 * at the end, a removed one leaves, one that comes back goes at the end again.
 */
class NodeRegistrationOrderTest {
  /** One step: register (or re-register with {@code cards} cards) or remove node {@code node}. */
  record Step(boolean remove, int node, int cards) {}

  @Property(tries = 300)
  void theListIsTheRegisteredNodesInRegistrationOrder(@ForAll("steps") List<Step> steps) {
    Engine engine = Fixtures.engine();
    List<String> model = new ArrayList<>();
    for (Step s : steps) {
      String name = "n" + s.node();
      if (s.remove()) {
        assertThat(engine.removeNode(name)).isEqualTo(model.remove(name));
      } else {
        engine.upsertNode(Fixtures.node(name, s.node(), s.cards()));
        if (!model.contains(name)) {
          model.add(name);
        }
      }
      assertThat(engine.nodeNames()).isEqualTo(model);
    }
    // Every registered node is a candidate the filter looks at, in that order.
    CandidateNodes all = engine.candidates(model, null);
    assertThat(all.names()).isEqualTo(model);
  }

  @Provide
  Arbitrary<List<Step>> steps() {
    Arbitrary<Step> step =
        net.jqwik.api.Combinators.combine(Arbitraries.of(true, false, false), Arbitraries.integers().between(0, 6), Arbitraries.integers().between(1, 3))
            .as(Step::new);
    return step.list().ofMaxSize(40);
  }
}
