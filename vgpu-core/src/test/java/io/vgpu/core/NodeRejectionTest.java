package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.FitReason;
import java.util.EnumMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NodeRejectionTest {

  @Test
  void theCountsAreACopyInTheReasonsOrderThatNobodyCanChange() {
    Map<FitReason, Integer> mine = new EnumMap<>(FitReason.class);
    mine.put(FitReason.CARD_INSUFFICIENT_MEMORY, 2);
    mine.put(FitReason.CARD_NOT_HEALTH, 1);
    NodeRejection r = new NodeRejection("n1", NodeRejection.Kind.DEVICES, mine, 3);
    mine.put(FitReason.CARD_CORDONED, 5);

    assertThat(r.counts()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 2, FitReason.CARD_NOT_HEALTH, 1));
    assertThat(r.counts().keySet()).containsExactlyElementsOf(new EnumMap<>(Map.of(FitReason.CARD_NOT_HEALTH, 1, FitReason.CARD_INSUFFICIENT_MEMORY, 2)).keySet());
    assertThat(r.counts().hashCode()).isEqualTo(Map.of(FitReason.CARD_INSUFFICIENT_MEMORY, 2, FitReason.CARD_NOT_HEALTH, 1).hashCode());
    assertThatThrownBy(() -> r.counts().put(FitReason.CARD_CORDONED, 1)).isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> r.counts().entrySet().iterator().next().setValue(9)).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void anotherRejectionsCountsAreSharedNotCopied() {
    NodeRejection first = new NodeRejection("n1", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_CORE, 4), 4);
    NodeRejection second = new NodeRejection("n2", NodeRejection.Kind.DEVICES, first.counts(), 4);

    assertThat(second.counts()).isSameAs(first.counts());
    assertThat(second).isEqualTo(new NodeRejection("n2", NodeRejection.Kind.DEVICES, Map.of(FitReason.CARD_INSUFFICIENT_CORE, 4), 4));
    assertThat(second.counts()).hasToString("{" + FitReason.CARD_INSUFFICIENT_CORE + "=4}");
  }
}
