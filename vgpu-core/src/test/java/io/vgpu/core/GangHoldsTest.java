package io.vgpu.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.PodRef;
import java.util.List;
import org.junit.jupiter.api.Test;

class GangHoldsTest {
  private static final PodRef A = new PodRef("ml", "w0");
  private static final PodRef B = new PodRef("ml", "w1");
  private static final PodRef C = new PodRef("ml", "w2");

  @Test
  void membersNotBoundByTheDeadlineAreHandedBackAndBoundOnesStay() {
    GangHolds holds = new GangHolds();
    holds.hold("ml/pg", List.of(A, B, C), 100);
    holds.bound(A);
    assertThat(holds.expire(99)).isEmpty();
    assertThat(holds.gangOf(B)).contains("ml/pg");
    assertThat(holds.expire(100)).containsExactly(B, C);
    assertThat(holds.holds("ml/pg")).isFalse();
    assertThat(holds.gangOf(B)).isEmpty();
    assertThat(holds.expire(1_000)).isEmpty();
  }

  @Test
  void aGangWhoseMembersAllBoundIsNoLongerHeld() {
    GangHolds holds = new GangHolds();
    holds.hold("ml/pg", List.of(A, B), 100);
    holds.bound(A);
    holds.bound(B);
    assertThat(holds.holds("ml/pg")).isFalse();
    assertThat(holds.expire(500)).isEmpty();
  }

  @Test
  void deadlinesCompareAcrossTheNanoTimeWrap() {
    GangHolds holds = new GangHolds();
    holds.hold("g", List.of(A), Long.MAX_VALUE - 5);
    assertThat(holds.expire(Long.MAX_VALUE - 10)).isEmpty();
    assertThat(holds.expire(Long.MIN_VALUE + 3)).containsExactly(A);
  }
}
