package io.vgpu.k8s.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.FitReason;
import io.vgpu.core.NodeRejection;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReasonCodecTest {

  private static NodeRejection devices(int cards, Object... reasonsAndCounts) {
    Map<FitReason, Integer> counts = new EnumMap<>(FitReason.class);
    for (int i = 0; i < reasonsAndCounts.length; i += 2) {
      counts.put((FitReason) reasonsAndCounts[i], (Integer) reasonsAndCounts[i + 1]);
    }
    return new NodeRejection("n", NodeRejection.Kind.DEVICES, counts, cards);
  }

  @Test
  void rendersCountsOutOfTheNodesCardsSortedAsPlainStrings() {
    assertThat(ReasonCodec.render(devices(4, FitReason.CARD_INSUFFICIENT_MEMORY, 3, FitReason.CARD_INSUFFICIENT_CORE, 1)))
        .isEqualTo("1/4 CardInsufficientCore, 3/4 CardInsufficientMemory");
    assertThat(ReasonCodec.render(devices(2, FitReason.CARD_UUID_MISMATCH, 1, FitReason.CARD_INSUFFICIENT_MEMORY, 1)))
        .isEqualTo("1/2 CardInsufficientMemory, 1/2 CardUuidMismatch");
  }

  @Test
  void aRendererGivesEachRejectionItsOwnStringAndRendersEqualReasonsOnce() {
    ReasonCodec.Renderer renderer = new ReasonCodec.Renderer();
    String first = renderer.render(devices(4, FitReason.CARD_INSUFFICIENT_MEMORY, 3, FitReason.CARD_INSUFFICIENT_CORE, 1));
    String other = renderer.render(devices(4, FitReason.CARD_INSUFFICIENT_MEMORY, 4));
    String fewerCards = renderer.render(devices(2, FitReason.CARD_INSUFFICIENT_MEMORY, 2));
    String again = renderer.render(new NodeRejection("m", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_CORE, 1, FitReason.CARD_INSUFFICIENT_MEMORY, 3), 4));

    assertThat(first).isEqualTo("1/4 CardInsufficientCore, 3/4 CardInsufficientMemory");
    assertThat(other).isEqualTo("4/4 CardInsufficientMemory");
    assertThat(fewerCards).isEqualTo("2/2 CardInsufficientMemory");
    assertThat(again).isSameAs(first);
    assertThat(renderer.render(new NodeRejection("n", NodeRejection.Kind.INSUFFICIENT_DEVICES, Map.of(), 2))).isEqualTo("NodeInsufficientDevice");
    assertThat(renderer.render(new NodeRejection("n", NodeRejection.Kind.UNREGISTERED, Map.of(), 0))).isEqualTo("node unregistered");
  }

  @Test
  void sortsByTextSoTenComesBeforeTwo() {
    Map<String, Integer> counts = new LinkedHashMap<>();
    counts.put("CardTimeSlicingExhausted", 2);
    counts.put("CardInsufficientMemory", 10);
    assertThat(ReasonCodec.render(counts, 12)).isEqualTo("10/12 CardInsufficientMemory, 2/12 CardTimeSlicingExhausted");
  }

  @Test
  void rendersTheBareNodeWords() {
    assertThat(ReasonCodec.render(new NodeRejection("n", NodeRejection.Kind.INSUFFICIENT_DEVICES, Map.of(), 2)))
        .isEqualTo("NodeInsufficientDevice");
    assertThat(ReasonCodec.render(new NodeRejection("n", NodeRejection.Kind.UNREGISTERED, Map.of(), 0)))
        .isEqualTo("node unregistered");
    assertThat(ReasonCodec.NODE_SELECTOR_MISMATCH).isEqualTo("NodeSelectorMismatch");
  }

  @Test
  void parsesLikeHamiSkippingEntriesWithoutCounts() {
    assertThat(ReasonCodec.parse("1/4 CardInsufficientCore, 3/4 CardInsufficientMemory"))
        .containsExactly(Map.entry("CardInsufficientCore", 1), Map.entry("CardInsufficientMemory", 3));
    assertThat(ReasonCodec.parse("NodeInsufficientDevice")).isEmpty();
    assertThat(ReasonCodec.parse("node unregistered")).isEmpty();
  }

  @Test
  void parsesBackIntoTheRejectionItRenders() {
    NodeRejection r = devices(4, FitReason.CARD_INSUFFICIENT_MEMORY, 3, FitReason.RESOURCE_QUOTA_NOT_FIT, 1);
    assertThat(ReasonCodec.toRejection("n", ReasonCodec.render(r))).isEqualTo(r);
    assertThat(ReasonCodec.toRejection("n", "NodeInsufficientDevice").kind()).isEqualTo(NodeRejection.Kind.INSUFFICIENT_DEVICES);
    assertThat(ReasonCodec.toRejection("n", "node unregistered").kind()).isEqualTo(NodeRejection.Kind.UNREGISTERED);
  }

  @Test
  void refusesUnknownWordsAndInconsistentCardCounts() {
    assertThatThrownBy(() -> ReasonCodec.toRejection("n", "1/2 CardOnFire")).hasMessage("unknown reason 'CardOnFire'");
    assertThatThrownBy(() -> ReasonCodec.toRejection("n", "1/2 CardInsufficientCore, 1/3 CardInsufficientMemory"))
        .hasMessageContaining("both 2 and 3");
    assertThatThrownBy(() -> ReasonCodec.toRejection("n", "CardInsufficientCore")).hasMessageContaining("<count>/<cards>");
  }
}
