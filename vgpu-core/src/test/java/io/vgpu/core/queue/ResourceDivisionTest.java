package io.vgpu.core.queue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ResourceDivisionTest {
  private static QueueSpec queue(String name, String parent, int priority, double quota, double limit, double weight) {
    return new QueueSpec(name, Optional.ofNullable(parent), priority, Map.of(QueueResource.GPU, new ResourceTerms(quota, limit, weight)));
  }

  private static QueueDemand gpus(double requested, double allocated) {
    return new QueueDemand(Map.of(QueueResource.GPU, requested), Map.of(QueueResource.GPU, allocated));
  }

  private static QueueShare gpu(Map<String, Map<QueueResource, QueueShare>> result, String queue) {
    return result.get(queue).get(QueueResource.GPU);
  }

  /** Seed 001: a whole card and a 20480-MiB pod at portion 0.51 in default-queue under default, 8 cards. */
  @Test
  void theSeedsQueuesGetWhatTheyAskFor() {
    var result =
        ResourceDivision.divide(
            List.of(queue("default", null, 100, -1, -1, 1), queue("default-queue", "default", 100, -1, -1, 1)),
            Map.of("default-queue", gpus(1.51, 1.51)),
            Map.of(QueueResource.GPU, 8.0));
    assertThat(gpu(result, "default")).isEqualTo(new QueueShare(8, 1.51, 1.51, 1.51, -1));
    assertThat(gpu(result, "default-queue")).isEqualTo(new QueueShare(1.51, 1.51, 1.51, 1.51, -1));
    assertThat(result.get("default-queue").get(QueueResource.CPU)).isEqualTo(new QueueShare(0, 0, 0, 0, 0));
  }

  @Test
  void overQuotaGoesByWeightInWholeUnitsAndTheLeftoverToTheLargestRemainder() {
    // 10 cards, no quota; weights 1 and 2, both ask for 20: offers 3.33 and 6.67 -> 3 and 6, the last card to b (0.67 > 0.33).
    var result =
        ResourceDivision.divide(
            List.of(queue("a", null, 100, 0, -1, 1), queue("b", null, 100, 0, -1, 2)), Map.of("a", gpus(20, 0), "b", gpus(20, 0)), Map.of(QueueResource.GPU, 10.0));
    assertThat(gpu(result, "a").fairShare()).isEqualTo(3);
    assertThat(gpu(result, "b").fairShare()).isEqualTo(7);
  }

  @Test
  void aQueueThatAsksLessThanItsOfferLeavesTheRestForAnotherRound() {
    // 10 cards, equal weights: a asks 2 of its offer 5, so b gets the other 8 in a second round.
    var result =
        ResourceDivision.divide(
            List.of(queue("a", null, 100, 0, -1, 1), queue("b", null, 100, 0, -1, 1)), Map.of("a", gpus(2, 0), "b", gpus(9, 0)), Map.of(QueueResource.GPU, 10.0));
    assertThat(gpu(result, "a").fairShare()).isEqualTo(2);
    assertThat(gpu(result, "b").fairShare()).isEqualTo(8);
  }

  @Test
  void deservedIsGivenEvenBeyondTheTotalAndPriorityComesBeforeWeight() {
    var result =
        ResourceDivision.divide(
            List.of(queue("low", null, 50, 6, -1, 10), queue("high", null, 200, 6, -1, 1), queue("mid", null, 100, 0, -1, 5)),
            Map.of("low", gpus(8, 0), "high", gpus(9, 0), "mid", gpus(4, 0)),
            Map.of(QueueResource.GPU, 10.0));
    // Deserved first: 6 + 6 = 12 > 10, nothing left over quota.
    assertThat(gpu(result, "low").fairShare()).isEqualTo(6);
    assertThat(gpu(result, "high").fairShare()).isEqualTo(6);
    assertThat(gpu(result, "mid").fairShare()).isZero();
    var roomy =
        ResourceDivision.divide(
            List.of(queue("low", null, 50, 0, -1, 10), queue("high", null, 200, 0, -1, 1)), Map.of("low", gpus(8, 0), "high", gpus(9, 0)), Map.of(QueueResource.GPU, 10.0));
    assertThat(gpu(roomy, "high").fairShare()).isEqualTo(9);
    assertThat(gpu(roomy, "low").fairShare()).isEqualTo(1);
  }

  @Test
  void aLimitCapsTheRequestAndChildrenDivideTheirParentsShare() {
    var result =
        ResourceDivision.divide(
            List.of(queue("org", null, 100, 4, -1, 0), queue("x", "org", 100, -1, 3, 1), queue("y", "org", 100, 0, -1, 1)),
            Map.of("x", gpus(5, 1), "y", gpus(5, 0)),
            Map.of(QueueResource.GPU, 100.0));
    assertThat(gpu(result, "org")).isEqualTo(new QueueShare(4, 10, 1, 4, -1));
    assertThat(gpu(result, "x")).isEqualTo(new QueueShare(4, 3, 1, 3, 3));
    assertThat(gpu(result, "y").fairShare()).isEqualTo(1);
  }

  @Test
  void badTreesAreRefused() {
    assertThatThrownBy(() -> ResourceDivision.divide(List.of(queue("a", "nobody", 100, 0, 0, 0)), Map.of(), Map.of()))
        .hasMessage("queue a names parent nobody, which is not given");
    assertThatThrownBy(() -> ResourceDivision.divide(List.of(queue("a", "b", 100, 0, 0, 0), queue("b", "a", 100, 0, 0, 0)), Map.of(), Map.of()))
        .hasMessageContaining("form a cycle");
    assertThatThrownBy(() -> ResourceDivision.divide(List.of(queue("a", null, 100, 0, 0, 0)), Map.of("z", gpus(1, 0)), Map.of()))
        .hasMessage("a demand names queue z, which is not given");
  }

  // --- Properties over flat trees of up to 6 queues.

  record Case(List<QueueSpec> queues, Map<String, QueueDemand> demands, double total) {}

  @Provide
  Arbitrary<Case> cases() {
    Arbitrary<Double> amount = Arbitraries.integers().between(0, 40).map(i -> i / 2.0);
    Arbitrary<Double> quota = Arbitraries.oneOf(Arbitraries.just(-1.0), amount);
    Arbitrary<Double> limit = Arbitraries.oneOf(Arbitraries.just(-1.0), amount);
    Arbitrary<Double> weight = Arbitraries.integers().between(0, 4).map(Integer::doubleValue);
    Arbitrary<Integer> priority = Arbitraries.of(50, 100, 200);
    Arbitrary<double[]> one = Combinators.combine(quota, limit, weight, priority, amount).as((q, l, w, p, req) -> new double[] {q, l, w, p, req});
    return Combinators.combine(one.list().ofMinSize(1).ofMaxSize(6), Arbitraries.integers().between(0, 40))
        .as((rows, total) -> {
          List<QueueSpec> queues = new ArrayList<>();
          Map<String, QueueDemand> demands = new HashMap<>();
          for (int i = 0; i < rows.size(); i++) {
            double[] row = rows.get(i);
            queues.add(queue("q" + i, null, (int) row[3], row[0], row[1], row[2]));
            demands.put("q" + i, gpus(row[4], 0));
          }
          return new Case(queues, demands, total);
        });
  }

  @Property(tries = 400)
  void sharesNeverExceedTheTotalExceptByDeservedQuota(@ForAll("cases") Case c) {
    var result = ResourceDivision.divide(c.queues(), c.demands(), Map.of(QueueResource.GPU, c.total()));
    double shares = 0;
    double deservedPart = 0;
    for (QueueSpec q : c.queues()) {
      QueueShare s = gpu(result, q.name());
      shares += s.fairShare();
      deservedPart += Math.min(s.deserved(), s.requested());
    }
    assertThat(shares).isLessThanOrEqualTo(Math.max(c.total(), deservedPart) + 1e-9);
  }

  @Property(tries = 400)
  void aQueueGetsAtLeastWhatItAsksUpToItsDeservedQuota(@ForAll("cases") Case c) {
    var result = ResourceDivision.divide(c.queues(), c.demands(), Map.of(QueueResource.GPU, c.total()));
    for (QueueSpec q : c.queues()) {
      QueueShare s = gpu(result, q.name());
      assertThat(s.fairShare()).isGreaterThanOrEqualTo(Math.min(s.deserved(), s.requested()) - 1e-9);
    }
  }

  @Property(tries = 400)
  void whenEverythingFitsEveryQueueGetsExactlyItsRequest(@ForAll("cases") Case c) {
    double asked = 0;
    for (QueueSpec q : c.queues()) {
      ResourceTerms t = q.terms(QueueResource.GPU);
      double req = c.demands().get(q.name()).requested(QueueResource.GPU);
      asked += t.unlimited() ? req : Math.min(req, t.limit());
    }
    boolean everyoneCanGrow = c.queues().stream().allMatch(q -> q.terms(QueueResource.GPU).overQuotaWeight() > 0);
    if (asked > c.total() || !everyoneCanGrow) {
      return;
    }
    var result = ResourceDivision.divide(c.queues(), c.demands(), Map.of(QueueResource.GPU, c.total()));
    for (QueueSpec q : c.queues()) {
      QueueShare s = gpu(result, q.name());
      assertThat(s.fairShare()).isCloseTo(s.requested(), within(1e-9));
    }
  }

  @Property(tries = 300)
  void priorityDominatesWeight(@ForAll("cases") Case c) {
    // A queue that is still short after the division has a priority no higher than any queue that got
    // something over its quota: over-quota goes to the highest level first.
    var result = ResourceDivision.divide(c.queues(), c.demands(), Map.of(QueueResource.GPU, c.total()));
    for (QueueSpec shortQ : c.queues()) {
      QueueShare s = gpu(result, shortQ.name());
      boolean isShort = s.fairShare() + 1 <= s.requested() && shortQ.terms(QueueResource.GPU).overQuotaWeight() > 0;
      if (!isShort) {
        continue;
      }
      for (QueueSpec other : c.queues()) {
        QueueShare o = gpu(result, other.name());
        boolean gotOverQuota = o.fairShare() > Math.min(o.deserved(), o.requested()) + 1e-9;
        if (gotOverQuota) {
          assertThat(other.priority()).as("%s got over quota while %s (higher priority) is short", other.name(), shortQ.name()).isGreaterThanOrEqualTo(shortQ.priority());
        }
      }
    }
  }
}
