package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class GpuPackTest {
  private final AtomicInteger made = new AtomicInteger();
  private final Supplier<String> fresh = () -> "new" + made.incrementAndGet();

  @Test
  void aFractionOnAnIdleNodeOpensANewGroup() {
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 7, Map.of()), 20480, 1, fresh)).contains(List.of("new1"));
  }

  @Test
  void twoHalvesByMemoryDoNotShareACardButTwoHalvesByFractionDo() {
    // 40900 - 20480 - 20480 = -60: KAI opens a second card
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 6, Map.of("g1", 20480L)), 20480, 1, fresh)).contains(List.of("new1"));
    // int64(0.5 x 40900) = 20450 twice fits exactly
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 6, Map.of("g1", 20450L)), 20450, 1, fresh)).contains(List.of("g1"));
  }

  @Test
  void theFullestGroupWhereItFitsComesFirst() {
    Map<String, Long> groups = new LinkedHashMap<>();
    groups.put("g1", 10000L);
    groups.put("g2", 30000L);
    groups.put("g3", 40000L);
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 0, groups), 5000, 1, fresh)).contains(List.of("g2"));
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 1, groups), 5000, 2, fresh)).contains(List.of("g2", "g1"));
  }

  @Test
  void tooFewCardsIsNoFit() {
    assertThat(GpuPack.choose(new GpuPack.NodeCards(40900, 1, Map.of()), 20480, 2, fresh)).isEmpty();
    assertThat(GpuPack.choose(new GpuPack.NodeCards(100, 8, Map.of()), 20480, 1, fresh)).isEmpty();
  }
}
