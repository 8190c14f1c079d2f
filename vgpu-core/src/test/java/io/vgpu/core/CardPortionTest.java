package io.vgpu.core;

import static io.vgpu.core.Fixtures.node;
import static io.vgpu.core.Fixtures.place;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.CardPortion;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** KAI Scheduler's portions as a request kind of the engine: resolved per card, never over-committing one. */
class CardPortionTest {

  /** KAI v0.17's worked cases (reference kai.md §1.3): the label, gpu-memory, the portion and the limit. */
  @ParameterizedTest
  @CsvSource({"40960,20480,51,20889", "15360,4096,27,4147", "81920,40960,51,41779", "10000,700,8,800", "10000,5000,50,5000"})
  void memoryPortionsRoundAsKaiDoes(int label, int memory, int hundredths, int limit) {
    CardPortion portion = CardPortion.ofMemory(memory);
    assertThat(portion.hundredthsOn(label)).isEqualTo(hundredths);
    assertThat(portion.memoryOn(label)).isEqualTo(limit);
  }

  @Test
  void aFixedPortionIsTheSameShareOfEveryCard() {
    CardPortion half = CardPortion.ofHundredths(50);
    assertThat(half.hundredthsOn(40960)).isEqualTo(50);
    assertThat(half.memoryOn(40960)).isEqualTo(20480);
    assertThat(CardPortion.ofHundredths(25).memoryOn(15360)).isEqualTo(3840);
  }

  @Test
  void moreThanACardNeverFits() {
    assertThat(CardPortion.ofMemory(40960).hundredthsOn(40960)).isEqualTo(CardPortion.OVER_A_CARD);
    assertThat(CardPortion.ofMemory(40960).memoryOn(40960)).isGreaterThan(40960);
    assertThat(CardPortion.ofMemory(1).hundredthsOn(99)).isEqualTo(CardPortion.OVER_A_CARD);
    assertThat(CardPortion.ofMemory(Integer.MAX_VALUE).memoryOn(40960)).isGreaterThan(40960);
  }

  @Test
  void badPortionsAreRefusedNamingTheValue() {
    assertThatThrownBy(() -> new CardPortion(0, 0)).hasMessageContaining("exactly one");
    assertThatThrownBy(() -> new CardPortion(50, 100)).hasMessageContaining("exactly one");
    assertThatThrownBy(() -> CardPortion.ofHundredths(101)).hasMessageContaining("101");
    assertThatThrownBy(() -> new ContainerRequest("app", 1, 100, ContainerRequest.UNSET, ContainerRequest.UNSET, CardPortion.ofHundredths(5)))
        .hasMessageContaining("container app");
  }

  /**
   * Three {@code gpu-memory: 13600} pods: KAI's portion is 0.34 of an A100-40GB, 13926 MiB each, 41778
   * together. KAI's own check (in floored MiB of the raw request) lets all three share one card; vgpu
   * never lets limits sum past a card, so the third goes to the second card.
   */
  @Test
  void threeThirteenSixHundredPodsDoNotShareOneCard() {
    Engine engine = Fixtures.engine("binpack", "binpack");
    engine.upsertNode(node("n1", 1, 2));
    PodGrant[] grants = new PodGrant[3];
    for (int i = 0; i < 3; i++) {
      grants[i] = place(engine, portionPod("p" + i, CardPortion.ofMemory(13600)));
      assertThat(grants[i].containers().get(0).devices().get(0).memoryMiB()).isEqualTo(13926);
    }
    assertThat(Fixtures.uuids(grants[0])).isEqualTo(Fixtures.uuids(grants[1]));
    assertThat(Fixtures.uuids(grants[2])).isNotEqualTo(Fixtures.uuids(grants[0]));
  }

  @Test
  void twoHalvesShareACardAndAThirdDoesNot() {
    Engine engine = Fixtures.engine("binpack", "binpack");
    engine.upsertNode(node("n1", 1, 1));
    place(engine, portionPod("a", CardPortion.ofHundredths(50)));
    place(engine, portionPod("b", CardPortion.ofHundredths(50)));
    assertThat(engine.filter(engine.compile(portionPod("c", CardPortion.ofHundredths(1))), null, false).placement()).isEmpty();
  }

  @Test
  void aMemoryPortionIsResolvedOnEachCardItIsTried() {
    Engine engine = Fixtures.engine("binpack", "binpack");
    engine.upsertNode(io.vgpu.core.NodeDevices.of("small", List.of(Fixtures.card(Fixtures.uuid(1, 0), 0, 15360))));
    PodGrant grant = place(engine, portionPod("t4", CardPortion.ofMemory(4096)));
    assertThat(grant.containers().get(0).devices().get(0).memoryMiB()).isEqualTo(4147);
  }

  static PodRequest portionPod(String name, CardPortion portion) {
    return PodRequest.of(new PodRef("default", name), List.of(ContainerRequest.devices("app", 1).withPortion(portion)));
  }
}
