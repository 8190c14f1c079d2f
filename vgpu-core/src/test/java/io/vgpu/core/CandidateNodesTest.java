package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * A candidate list resolved once ({@link Engine#candidates}) filters exactly as the names do, is reused
 * only while it lists the same names and the engine's nodes have not joined or left, and is resolved
 * again when it has gone stale.
 */
class CandidateNodesTest {
  /** Nodes n0..n5 with 1..6 cards, so every pod has one best node and distinct rejections. */
  private static Engine engineWithNodes() {
    Engine e = engine();
    for (int i = 0; i < 6; i++) {
      e.upsertNode(node("n" + i, i, i + 1));
    }
    return e;
  }

  private static CompiledRequest twoCards(Engine e) {
    return e.compile(pod("p", gpu(2, 1024, 10)));
  }

  @Test
  void theSameNamesGiveBackTheSameResolution() {
    Engine e = engineWithNodes();
    CandidateNodes first = e.candidates(List.of("n0", "n1", "n2"), null);
    assertThat(e.candidates(new ArrayList<>(List.of("n0", "n1", "n2")), first)).isSameAs(first);
  }

  @Test
  void otherNamesOrderOrLengthGiveANewResolution() {
    Engine e = engineWithNodes();
    CandidateNodes first = e.candidates(List.of("n0", "n1", "n2"), null);
    assertThat(e.candidates(List.of("n0", "n1", "n3"), first)).isNotSameAs(first).extracting(CandidateNodes::names).isEqualTo(List.of("n0", "n1", "n3"));
    assertThat(e.candidates(List.of("n2", "n1", "n0"), first)).isNotSameAs(first).extracting(CandidateNodes::names).isEqualTo(List.of("n2", "n1", "n0"));
    assertThat(e.candidates(List.of("n0", "n1"), first)).isNotSameAs(first).extracting(CandidateNodes::size).isEqualTo(2);
    assertThat(e.candidates(List.of("n0", "n1", "n2", "n3"), first)).isNotSameAs(first).extracting(CandidateNodes::size).isEqualTo(4);
  }

  @Test
  void anotherEnginesResolutionIsNotReused() {
    Engine a = engineWithNodes();
    Engine b = engineWithNodes();
    CandidateNodes fromA = a.candidates(List.of("n0", "n1"), null);
    assertThat(b.candidates(List.of("n0", "n1"), fromA)).isNotSameAs(fromA);
  }

  @Test
  void aNodeThatJoinsAfterTheResolutionIsSeenByTheFilter() {
    Engine e = engineWithNodes();
    CandidateNodes resolved = e.candidates(List.of("n0", "late"), null);
    assertThat(e.filterResolved(twoCards(e), resolved, true).placement()).as("n0 has one card, late is unknown").isEmpty();

    e.upsertNode(node("late", 9, 4));
    assertThat(e.filterResolved(twoCards(e), resolved, true).placement()).get().extracting(Placement::node).isEqualTo("late");
    assertThat(e.candidates(List.of("n0", "late"), resolved)).as("stale: resolved again").isNotSameAs(resolved);
  }

  @Test
  void aNodeThatLeavesIsRejectedAsUnregistered() {
    Engine e = engineWithNodes();
    CandidateNodes resolved = e.candidates(List.of("n5", "n1"), null);
    assertThat(e.filterResolved(twoCards(e), resolved, false).placement()).get().extracting(Placement::node).isEqualTo("n5");

    e.removeNode("n5");
    FilterResult after = e.filterResolved(twoCards(e), e.candidates(List.of("n5", "n1"), resolved), true);
    assertThat(after.placement()).get().extracting(Placement::node).isEqualTo("n1");
    assertThat(after.rejections()).extracting(NodeRejection::node).containsExactly("n5");
  }

  @Test
  void usageReservedAfterTheResolutionIsSeenThroughIt() {
    Engine e = engineWithNodes();
    CandidateNodes resolved = e.candidates(List.of("n1"), null);
    Placement placed = e.filterResolved(twoCards(e), resolved, false).placement().orElseThrow();
    assertThat(e.reserve(placed).reserved()).isTrue();
    // n1's two cards now each hold 1024 MiB of a pod; a pod wanting all of a card's memory no longer fits.
    CompiledRequest whole = e.compile(pod("q", gpu(1, 40960, 0)));
    assertThat(e.filterResolved(whole, resolved, true).placement()).isEmpty();
    assertThat(e.filter(whole, List.of("n1"), true).placement()).isEmpty();
  }

  /** Any list of known and unknown names, in any order, with repeats: the same answer as by names. */
  @Property(tries = 200)
  void aResolutionFiltersAsTheNamesDo(@ForAll("names") List<String> names, @ForAll("names") List<String> before) {
    Engine e = engineWithNodes();
    CandidateNodes previous = e.candidates(before, null);
    CandidateNodes resolved = e.candidates(names, previous);
    assertThat(resolved.names()).isEqualTo(names);
    CompiledRequest request = twoCards(e);
    FilterResult byNames = e.filter(request, names, true);
    FilterResult byResolution = e.filterResolved(request, resolved, true);
    assertThat(byResolution.placement().map(Placement::node)).isEqualTo(byNames.placement().map(Placement::node));
    assertThat(byResolution.fitting()).isEqualTo(byNames.fitting());
    assertThat(byResolution.rejections()).isEqualTo(byNames.rejections());
  }

  /** Listing only the first few fitting nodes changes nothing else: the same placement, rejections and count. */
  @Property(tries = 200)
  void aCappedListingIsTheFullOnesPrefix(@ForAll("names") List<String> names, @ForAll @net.jqwik.api.constraints.IntRange(max = 8) int listed) {
    Engine e = engineWithNodes();
    CandidateNodes resolved = e.candidates(names, null);
    CompiledRequest request = twoCards(e);
    FilterResult full = e.filterResolved(request, resolved, true);
    FilterResult capped = e.filterResolved(request, resolved, listed);
    assertThat(capped.placement().map(Placement::node)).isEqualTo(full.placement().map(Placement::node));
    assertThat(capped.rejections()).isEqualTo(full.rejections());
    assertThat(capped.fittingCount()).isEqualTo(full.fitting().size()).isEqualTo(full.fittingCount());
    assertThat(capped.fitting()).isEqualTo(full.fitting().subList(0, Math.min(listed, full.fitting().size())));
  }

  /**
   * Without reasons the rejected nodes are only counted: the same placement, fitting nodes and count, no
   * rejection listed, and the candidates less the fitting count are the rejections that reasons list.
   */
  @Property(tries = 200)
  void withoutReasonsTheRejectionsAreOnlyCounted(@ForAll("names") List<String> names, @ForAll @net.jqwik.api.constraints.IntRange(max = 8) int listed) {
    // n0 has one card and "gone" and "other" are not registered: rejected both ways.
    Engine e = engineWithNodes();
    CandidateNodes resolved = e.candidates(names, null);
    CompiledRequest request = twoCards(e);
    FilterResult withReasons = e.filterResolved(request, resolved, listed, true);
    FilterResult counted = e.filterResolved(request, resolved, listed, false);
    assertThat(counted.placement()).isEqualTo(withReasons.placement());
    assertThat(counted.fitting()).isEqualTo(withReasons.fitting());
    assertThat(counted.fittingCount()).isEqualTo(withReasons.fittingCount());
    assertThat(counted.rejections()).isEmpty();
    assertThat(names.size() - counted.fittingCount()).isEqualTo(withReasons.rejections().size());
  }

  @Provide
  Arbitrary<List<String>> names() {
    return Arbitraries.of("n0", "n1", "n2", "n3", "n4", "n5", "gone", "other").list().ofMaxSize(10);
  }
}
