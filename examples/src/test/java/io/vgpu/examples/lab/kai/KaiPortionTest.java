package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class KaiPortionTest {
  /** kai.md §1.3's worked cases, recomputed: label, gpu-memory, floored, portion, limit. */
  @ParameterizedTest
  @CsvSource({
    "40960, 20480, 40900, 0.51, 20889m",
    "15360, 4096, 15300, 0.27, 4147m",
    "81920, 40960, 81900, 0.51, 41779m",
    "10000, 700, 10000, 0.08, 800m",
    "10000, 5000, 10000, 0.50, 5000m",
  })
  void memoryRequestsBecomeKaisPortionAndLimit(String label, long memory, long floored, String portion, String limit) {
    assertThat(KaiPortion.flooredMiB(label)).isEqualTo(OptionalLong.of(floored));
    String p = KaiPortion.formatted(KaiPortion.memoryPortion(memory, floored));
    assertThat(p).isEqualTo(portion);
    assertThat(KaiPortion.memoryLimit(label, p)).contains(limit);
  }

  @Test
  void aLabelInBytesIsTakenAsBytesAndFloored() {
    assertThat(KaiPortion.flooredMiB("4096")).isEqualTo(OptionalLong.of(4000));
    assertThat(KaiPortion.flooredMiB("4295000001")).isEqualTo(OptionalLong.of(4000));
  }

  @Test
  void aMissingOrBadLabelIsUnsyncedAndTheLimitIsSilentlyAbsent() {
    assertThat(KaiPortion.flooredMiB(null)).isEmpty();
    assertThat(KaiPortion.flooredMiB("40Gi")).isEmpty();
    assertThat(KaiPortion.memoryLimit(null, "0.51")).isEqualTo(Optional.empty());
    assertThat(KaiPortion.memoryLimit("0", "0.51")).isEmpty();
    assertThat(KaiPortion.memoryLimit("40960", "x")).isEmpty();
    // a memory pod on an unsynced node: 20480 / 100 is no portion of one card
    assertThat(KaiPortion.validPortion(KaiPortion.memoryPortion(20480, KaiPortion.UNSYNCED_MIB))).isFalse();
  }

  @Test
  void fractionsCountRoundedToHundredths() {
    assertThat(KaiPortion.fractionPortion(0.333)).isEqualTo(0.33);
    assertThat(KaiPortion.formatted(0.5)).isEqualTo("0.50");
    assertThat(KaiPortion.memoryLimit("40960", "0.50")).contains("20480m");
  }
}
