package io.vgpu.k8s.pod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ScoringWeights;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ScoringWeightsAnnotationTest {

  @Test
  void parsesThreeWeightsInAnyOrderWithSpaces() {
    assertThat(ScoringWeightsAnnotation.parse("slot=1,core=1,memory=3")).isEqualTo(new ScoringWeights(1, 1, 3));
    assertThat(ScoringWeightsAnnotation.parse(" memory = 2 , slot=0,core=5")).isEqualTo(new ScoringWeights(0, 5, 2));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "slot=1,core=1|expected slot, core, and memory weights",
        "slot=1,core=1,memory=1,extra=1|expected slot, core, and memory weights",
        "slot=1,core,memory=1|expected key=value entries",
        "slot=1,slot=2,memory=1|duplicate \"slot\" weight",
        "slot=x,core=1,memory=1|\"slot\" weight must be an integer",
        "slot=-1,core=1,memory=1|\"slot\" weight must not be negative",
        "slot=1,cores=1,memory=1|unknown weight \"cores\"",
        "slot=0,core=0,memory=0|at least one weight must be positive"
      })
  void rejectsWithHamisMessageNamingAnnotationAndValue(String value, String why) {
    assertThatThrownBy(() -> ScoringWeightsAnnotation.parse(value))
        .isInstanceOf(PodRequestException.class)
        .hasMessage("invalid hami.io/device-scoring-weights annotation \"" + value + "\": " + why);
  }
}
