package io.vgpu.k8s.watchdog;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Tolerance, grace, episodes: when a container counts as over its grant. */
class OverGrantJudgeTest {
  private static final long MIB = 1L << 20;
  private static final Instant T0 = Instant.parse("2026-12-01T20:00:00Z");
  private static final ContainerCard CARD = new ContainerCard("team", "p", "uid-1", "gpu", "GPU-0");
  private static final ContainerCard OTHER = new ContainerCard("team", "q", "uid-2", "gpu", "GPU-0");

  private final OverGrantJudge judge = new OverGrantJudge(512 * MIB, Duration.ofSeconds(2));

  private static OverGrantJudge.Usage usage(ContainerCard card, long nvmlMiB, long grantMiB) {
    return new OverGrantJudge.Usage(card, nvmlMiB * MIB, grantMiB * MIB, List.of(42));
  }

  private List<OverGrantJudge.Verdict> at(long seconds, OverGrantJudge.Usage... usages) {
    return judge.judge(T0.plusSeconds(seconds), List.of(usages));
  }

  @Test
  void overMeansMoreThanTheGrantPlusTheTolerance() {
    assertThat(judge.over(usage(CARD, 1024 + 512, 1024))).isFalse();
    assertThat(judge.over(new OverGrantJudge.Usage(CARD, (1024 + 512) * MIB + 1, 1024 * MIB, List.of()))).isTrue();
    assertThat(judge.over(usage(CARD, 512, 0))).isFalse();
    assertThat(judge.over(usage(CARD, 513, 0))).as("no grant on the card: only the tolerance").isTrue();
  }

  @Test
  void aContainerWithinItsGrantIsNeverJudged() {
    for (int s = 0; s < 30; s++) {
      assertThat(at(s, usage(CARD, 1500, 1024))).isEmpty();
    }
  }

  @Test
  void overForTheGracePeriodIsJudgedOnceAsTheFirstOfItsEpisode() {
    assertThat(at(0, usage(CARD, 4024, 1024))).isEmpty();
    assertThat(at(1, usage(CARD, 4024, 1024))).isEmpty();
    List<OverGrantJudge.Verdict> verdicts = at(2, usage(CARD, 4024, 1024));
    assertThat(verdicts).singleElement().satisfies(v -> {
      assertThat(v.usage().card()).isEqualTo(CARD);
      assertThat(v.overFor()).isEqualTo(Duration.ofSeconds(2));
      assertThat(v.firstOfEpisode()).isTrue();
    });
    assertThat(at(3, usage(CARD, 4024, 1024))).singleElement().satisfies(v -> {
      assertThat(v.overFor()).isEqualTo(Duration.ofSeconds(3));
      assertThat(v.firstOfEpisode()).as("the same episode goes on").isFalse();
    });
  }

  @Test
  void droppingBackWithinTheGrantEndsTheEpisode() {
    at(0, usage(CARD, 4024, 1024));
    at(1, usage(CARD, 4024, 1024));
    assertThat(at(2, usage(CARD, 1000, 1024))).isEmpty();
    assertThat(at(3, usage(CARD, 4024, 1024))).as("a new episode starts its grace period afresh").isEmpty();
    assertThat(at(4, usage(CARD, 4024, 1024))).isEmpty();
    assertThat(at(5, usage(CARD, 4024, 1024))).singleElement().satisfies(v -> assertThat(v.firstOfEpisode()).isTrue());
  }

  @Test
  void processesGoneFromTheCardEndTheEpisode() {
    at(0, usage(CARD, 4024, 1024));
    at(1, usage(CARD, 4024, 1024));
    assertThat(at(2)).isEmpty();
    assertThat(at(3, usage(CARD, 4024, 1024))).isEmpty();
  }

  @Test
  void containersAreJudgedEachOnItsOwn() {
    at(0, usage(CARD, 4024, 1024), usage(OTHER, 100, 1024));
    at(1, usage(CARD, 4024, 1024), usage(OTHER, 4024, 1024));
    List<OverGrantJudge.Verdict> verdicts = at(2, usage(CARD, 4024, 1024), usage(OTHER, 4024, 1024));
    assertThat(verdicts).extracting(v -> v.usage().card()).containsExactly(CARD);
    assertThat(at(3, usage(CARD, 4024, 1024), usage(OTHER, 4024, 1024))).extracting(v -> v.usage().card()).containsExactly(CARD, OTHER);
  }

  @Test
  void aZeroGracePeriodJudgesAtOnce() {
    OverGrantJudge strict = new OverGrantJudge(0, Duration.ZERO);
    assertThat(strict.judge(T0, List.of(usage(CARD, 1025, 1024)))).singleElement().satisfies(v -> assertThat(v.overFor()).isZero());
  }

  @Test
  void everySequenceOfTwelvePollsIsJudgedAsTheRuleSays() {
    // Polls one second apart, grace 2 s: judged at a poll iff the container has been over on this poll and
    // the two before it without a break; first of its episode iff that run is exactly three polls long.
    for (int pattern = 0; pattern < 1 << 12; pattern++) {
      OverGrantJudge fresh = new OverGrantJudge(512 * MIB, Duration.ofSeconds(2));
      int run = 0;
      for (int poll = 0; poll < 12; poll++) {
        boolean over = (pattern >> poll & 1) == 1;
        run = over ? run + 1 : 0;
        List<OverGrantJudge.Verdict> verdicts = fresh.judge(T0.plusSeconds(poll), List.of(usage(CARD, over ? 2000 : 1536, 1024)));
        List<OverGrantJudge.Verdict> expected = run < 3 ? List.of()
            : List.of(new OverGrantJudge.Verdict(usage(CARD, 2000, 1024), Duration.ofSeconds(run - 1), run == 3));
        if (!verdicts.equals(expected)) {
          throw new AssertionError("pattern " + Integer.toBinaryString(pattern) + " poll " + poll + ": " + verdicts + ", expected " + expected);
        }
      }
    }
  }
}
