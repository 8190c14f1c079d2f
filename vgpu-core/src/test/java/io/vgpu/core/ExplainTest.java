package io.vgpu.core;

import static io.vgpu.core.Fixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.Explanation.CardExplanation;
import io.vgpu.core.Explanation.NearestFix;
import io.vgpu.core.Explanation.Shortfall;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Explanations whose answers are worked out by hand in the comments. */
class ExplainTest {
  private static final PodRef P1 = new PodRef("default", "p1");
  private static final PodRef P3 = new PodRef("default", "p3");

  private static PodRequest pinned(String name, ContainerRequest c, String uuid) {
    return pod(name, c).withConstraints(DeviceConstraints.NONE.withUuids(List.of(uuid), List.of()));
  }

  /** n1: two 40960 MiB A100s, card 0 holds 30000 MiB / 50 cores (p1), card 1 35000 MiB / 10 cores (p3); n2: one T4. */
  private static Engine cluster() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 2));
    e.upsertNode(NodeDevices.of("n2", List.of(new SchedulableDevice(uuid(1, 0), 0, "NVIDIA-Tesla T4", 15360, 100, 10, 0, true, "hami-core"))));
    place(e, pinned("p1", gpu(1, 30000, 50), uuid(0, 0)));
    place(e, pinned("p3", gpu(1, 35000, 10), uuid(0, 1)));
    return e;
  }

  @Test
  void memoryShortfallPointsAtTheCheapestCardAndItsHolder() {
    Engine e = cluster();
    PodRequest p2 = pod("p2", gpu(1, 12000, 30)).withConstraints(DeviceConstraints.NONE.withTypes(List.of("A100"), List.of()));
    Explanation x = e.explain(e.compile(p2), null);

    // n1 card 0: free 40960-30000 = 10960 < 12000 -> short 1040 MiB; 50 cores free >= 30.
    // n1 card 1: free 40960-35000 = 5960 -> short 6040 MiB.
    // n2: the T4 fails the type constraint, which no freeing can fix.
    assertThat(x.nodes()).hasSize(2);
    var n1 = x.nodes().get(0);
    assertThat(n1.fits()).isFalse();
    assertThat(n1.rejection().counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 2));
    assertThat(n1.cards())
        .containsExactly(
            new CardExplanation(uuid(0, 0), List.of(FitReason.CARD_INSUFFICIENT_MEMORY), new Shortfall(1040, 0, 0), List.of(P1)),
            new CardExplanation(uuid(0, 1), List.of(FitReason.CARD_INSUFFICIENT_MEMORY), new Shortfall(6040, 0, 0), List.of(P3)));
    var n2 = x.nodes().get(1);
    assertThat(n2.cards()).containsExactly(new CardExplanation(uuid(1, 0), List.of(FitReason.CARD_TYPE_MISMATCH), Shortfall.NONE, List.of()));

    // cost of card 0 = 1040 / 40960.
    assertThat(x.nearest())
        .contains(new NearestFix("n1", List.of(uuid(0, 0)), "free 1040 MiB on " + uuid(0, 0) + " (held by default/p1)", 1040.0 / 40960));
  }

  @Test
  void everyFailedCheckIsListedNotOnlyTheFirst() {
    Engine e = cluster();
    // 12000 MiB and 95 cores: card 0 lacks 1040 MiB and 45 cores; card 1 lacks 6040 MiB and 5 cores.
    Explanation x = e.explain(e.compile(pod("p2", gpu(1, 12000, 95))), List.of("n1"));
    assertThat(x.nodes().get(0).cards())
        .extracting(CardExplanation::reasons, CardExplanation::shortBy)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(List.of(FitReason.CARD_INSUFFICIENT_MEMORY, FitReason.CARD_INSUFFICIENT_CORE), new Shortfall(1040, 45, 0)),
            org.assertj.core.groups.Tuple.tuple(List.of(FitReason.CARD_INSUFFICIENT_MEMORY, FitReason.CARD_INSUFFICIENT_CORE), new Shortfall(6040, 5, 0)));
    // costs: card 0 = 1040/40960 + 45/100 = 0.4754; card 1 = 6040/40960 + 5/100 = 0.1975 -> card 1.
    NearestFix fix = x.nearest().orElseThrow();
    assertThat(fix.cards()).containsExactly(uuid(0, 1));
    assertThat(fix.change()).isEqualTo("free 6040 MiB and 5 cores on " + uuid(0, 1) + " (held by default/p3)");
  }

  @Test
  void anExclusiveRequestMustWaitForEverySharer() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    place(e, pod("a", gpu(1, 100, 0)));
    place(e, pod("b", gpu(1, 100, 0)));
    Explanation x = e.explain(e.compile(pod("whole", new ContainerRequest("c", 1, ContainerRequest.UNSET, 100, 100))), null);
    CardExplanation card = x.nodes().get(0).cards().get(0);
    // 100% of 40960 needs the 200 MiB the sharers hold as well, and both sharers must leave.
    assertThat(card.reasons()).containsExactly(FitReason.CARD_INSUFFICIENT_MEMORY, FitReason.EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT);
    assertThat(card.shortBy()).isEqualTo(new Shortfall(200, 0, 2));
    assertThat(x.nearest().orElseThrow().change())
        .isEqualTo("free 200 MiB and 2 sharing slots on " + uuid(0, 0) + " (held by default/a, default/b)");
  }

  @Test
  void aQuotaShortfallSaysHowMuchOfTheNamespaceToFree() {
    Engine e = engine();
    e.upsertNode(node("n1", 0, 1));
    e.setQuota("default", new QuotaLimits(20000, QuotaLimits.UNLIMITED));
    place(e, pod("holder", gpu(1, 15000, 0)));
    // 25% of 40960 = 10240; 15000 + 10240 - 20000 = 5240 over.
    Explanation x = e.explain(e.compile(pod("pct", new ContainerRequest("c", 1, ContainerRequest.UNSET, 25, 0))), null);
    assertThat(x.nodes().get(0).cards().get(0).reasons()).containsExactly(FitReason.RESOURCE_QUOTA_NOT_FIT);
    assertThat(x.nearest().orElseThrow().change()).isEqualTo("free 5240 MiB of namespace default's quota (or raise it)");
  }

  @Test
  void aPodThatFitsShowsTheChosenCardsAndNoFix() {
    Engine e = cluster();
    Explanation x = e.explain(e.compile(pod("small", gpu(1, 1000, 10))), null);
    assertThat(x.nodes().get(0).fits()).isTrue();
    // spread: card 1 (1 sharer, 10 cores, 35000 MiB) scores 10*(0.1+0.1+0.854)=10.54; card 0 10*(0.1+0.5+0.732)=13.3.
    assertThat(x.nodes().get(0).chosen()).containsExactly(new DeviceGrant(uuid(0, 1), "NVIDIA", 1000, 10));
    assertThat(x.nearest()).isEmpty();
  }

  @Test
  void tooFewCardsIsNoFixOnThatNode() {
    Engine e = cluster();
    Explanation x = e.explain(e.compile(pod("big", gpu(3, 1000, 0))), null);
    assertThat(x.nodes()).allSatisfy(n -> assertThat(n.rejection().kind()).isEqualTo(NodeRejection.Kind.INSUFFICIENT_DEVICES));
    assertThat(x.nearest()).isEmpty();
  }
}
