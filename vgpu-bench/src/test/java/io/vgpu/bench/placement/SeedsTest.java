package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SeedsTest {
  @Test
  void parsesARangeAListAndOneSeed() {
    assertThat(Seeds.parse("42..45")).containsExactly(42L, 43L, 44L, 45L);
    assertThat(Seeds.parse(" 7, 3,7 ")).containsExactly(7L, 3L);
    assertThat(Seeds.parse("42")).containsExactly(42L);
    assertThat(Seeds.parse("-2..-1")).containsExactly(-2L, -1L);
  }

  @Test
  void refusesRangesTooLargeToBeMeant() {
    assertThatThrownBy(() -> Seeds.parse("0..99999")).hasMessage("--seeds value '0..99999': more than 10000 seeds");
    assertThatThrownBy(() -> Seeds.parse("1,,2")).hasMessageContaining("'' is not a whole number");
  }
}
