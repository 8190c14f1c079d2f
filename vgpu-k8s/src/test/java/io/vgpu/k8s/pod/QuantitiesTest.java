package io.vgpu.k8s.pod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class QuantitiesTest {

  @ParameterizedTest
  @CsvSource({
    "1, 1",
    "+4096, 4096",
    "-5, -5",
    "1.5, 1.5",
    "1., 1",
    ".5, 0.5",
    "500m, 0.5",
    "2k, 2000",
    "4Ki, 4096",
    "1Mi, 1048576",
    "1Gi, 1073741824",
    "1e3, 1000",
    "1E3, 1000",
    "25e-1, 2.5",
    "1E, 1000000000000000000",
    "3n, 0.000000003",
    "010, 10"
  })
  void parsesTheApiServersGrammar(String text, String expected) {
    assertThat(Quantities.parse(text)).isEqualByComparingTo(new BigDecimal(expected));
  }

  @ParameterizedTest
  @ValueSource(strings = {"4Zi", "", "abc", "0x10", " 1", "1 ", "1K", "1ki", "--1", "1e", "1.2.3", "1Mii"})
  void rejectsWhatTheApiServerRejects(String text) {
    assertThatThrownBy(() -> Quantities.parse(text))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("'" + text + "' is not a valid quantity");
    assertThat(Quantities.isValid(text)).isFalse();
  }

  @Test
  void tellsWholeNumbers() {
    assertThat(Quantities.isInteger(Quantities.parse("2000m"))).isTrue();
    assertThat(Quantities.isInteger(Quantities.parse("1.0"))).isTrue();
    assertThat(Quantities.isInteger(Quantities.parse("0"))).isTrue();
    assertThat(Quantities.isInteger(Quantities.parse("1500m"))).isFalse();
    assertThat(Quantities.isInteger(Quantities.parse("0.5"))).isFalse();
  }
}
