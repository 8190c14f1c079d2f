package io.vgpu.bench.placement;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The discrete curves, computed by hand for a 4-GPU cluster (4,000 milli). */
class RecorderTest {
  @Test
  void theValueAtXIsTheMeanOverEventsThatRoundToX() {
    Recorder r = new Recorder(5, 4000);
    r.record(1000, 1000, 0); // 25% arrived, 25% allocated
    r.record(2000, 2000, 0); // 50%, 50%
    r.record(3000, 2500, 0); // 75%, 62.5%
    r.record(4000, 3000, 0); // 100%, 75%
    r.record(4020, 3100, 0); // 100.5% rounds half to even: 100; 77.5%

    SeedResult result = r.result(1, 0.5);

    assertThat(result.unallocatedAt(25)).isEqualTo(75);
    assertThat(result.unallocatedAt(75)).isEqualTo(37.5);
    // (75 + 77.5) / 2 allocated at 100%.
    assertThat(result.unallocatedAt100()).isEqualTo(23.75);
    assertThat(result.finalAllocation()).isEqualTo(77.5);
    assertThat(result.wallSeconds()).isEqualTo(0.5);
  }

  @Test
  void withoutAnEventAtXItAveragesTheNeighbouringPercents() {
    Recorder r = new Recorder(2, 4000);
    r.record(3960, 3000, 0); // 99%
    r.record(4040, 3200, 0); // 101%
    SeedResult result = r.result(1, 0);
    assertThat(result.unallocatedAt(100)).isEqualTo(100 - (75 + 80) / 2.0);
    assertThat(result.unallocatedAt(102)).isEqualTo(20);
    assertThat(result.unallocatedAt(103)).isNaN();
  }

  @Test
  void fragmentationIsAShareOfCapacityAndOfIdle() {
    Recorder r = new Recorder(2, 4000);
    r.record(4000, 3000, 400); // idle 1000: rate 40%
    r.record(4010, 3100, 400); // idle 900: rate 44.44%
    SeedResult result = r.result(1, 0);
    assertThat(result.fragmentationAmountAt100()).isEqualTo(10);
    assertThat(result.fragmentationRateAt100()).isEqualTo(42.22);
  }

  @Test
  void roundsHalfToEvenOnTheExactValueAsPythonDoes() {
    assertThat(Recorder.round2(2.675)).isEqualTo(2.67); // 2.675 is 2.67499999... in binary
    assertThat(Recorder.round2(0.125)).isEqualTo(0.12);
    assertThat(Recorder.round2(0.375)).isEqualTo(0.38);
  }
}
