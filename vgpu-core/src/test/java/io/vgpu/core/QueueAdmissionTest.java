package io.vgpu.core;

import static io.vgpu.core.Fixtures.node;
import static io.vgpu.core.Fixtures.place;
import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.CardPortion;
import io.vgpu.api.ContainerRequest;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.core.queue.QueueAllocation;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A queue's limit admitted at reserve, the pod-level reasons to wait, and gangs all or nothing. */
class QueueAdmissionTest {

  static QueueSpec queue(String name, String parent, double gpuLimit) {
    return new QueueSpec(
        name, Optional.ofNullable(parent), QueueSpec.DEFAULT_PRIORITY, Map.of(QueueResource.GPU, new ResourceTerms(0, gpuLimit, 1)));
  }

  static PodRequest whole(String name, String queue, int cards) {
    return PodRequest.of(new PodRef("default", name), List.of(ContainerRequest.devices("app", cards))).withQueue(queue);
  }

  static PodRequest portion(String name, String queue, CardPortion portion) {
    return PodRequest.of(new PodRef("default", name), List.of(ContainerRequest.devices("app", 1).withPortion(portion))).withQueue(queue);
  }

  private static Engine engine(int nodes, int cards) {
    Engine engine = Fixtures.engine("binpack", "binpack");
    for (int n = 0; n < nodes; n++) {
      engine.upsertNode(node("n" + n, n, cards));
    }
    return engine;
  }

  @Test
  void aPodWaitsForAQueueThatDoesNotExistAndRunsOnceItDoes() {
    Engine engine = engine(1, 2);
    FilterResult result = engine.filter(engine.compile(whole("p", "research", 1)), null, true);
    assertThat(result.placement()).isEmpty();
    assertThat(result.waiting()).map(Waiting::reason).contains(Waiting.Reason.QUEUE_MISSING);
    assertThat(result.waiting().get().message()).isEqualTo("queue research does not exist");
    engine.upsertQueue(queue("research", null, -1));
    assertThat(engine.filter(engine.compile(whole("p", "research", 1)), null, false).placement()).isPresent();
  }

  @Test
  void aParentQueueTakesNoPodsAndAMissingParentIsSaid() {
    Engine engine = engine(1, 2);
    engine.upsertQueue(queue("dept", null, -1));
    engine.upsertQueue(queue("team", "dept", -1));
    engine.upsertQueue(queue("orphan", "gone", -1));
    assertThat(engine.filter(engine.compile(whole("p", "dept", 1)), null, false).waiting().get().message())
        .isEqualTo("queue dept has child queues; only a leaf queue takes pods");
    assertThat(engine.filter(engine.compile(whole("p", "orphan", 1)), null, false).waiting().get().message())
        .isEqualTo("queue orphan is under queue gone, which does not exist");
    assertThat(engine.filter(engine.compile(whole("p", "team", 1)), null, false).placement()).isPresent();
  }

  @Test
  void aLimitHoldsForTheQueueAndEveryQueueAboveIt() {
    Engine engine = engine(2, 4);
    engine.upsertQueue(queue("dept", null, 3));
    engine.upsertQueue(queue("a", "dept", 2));
    engine.upsertQueue(queue("b", "dept", -1));
    place(engine, whole("a1", "a", 2));
    FilterResult overA = engine.filter(engine.compile(portion("a2", "a", CardPortion.ofHundredths(10))), null, false);
    assertThat(overA.waiting().get().reason()).isEqualTo(Waiting.Reason.QUEUE_LIMIT);
    assertThat(overA.waiting().get().message()).isEqualTo("queue a: gpu 2 held + 0.10 asked > limit 2");
    place(engine, portion("b1", "b", CardPortion.ofHundredths(50)));
    place(engine, portion("b2", "b", CardPortion.ofHundredths(50)));
    FilterResult overDept = engine.filter(engine.compile(portion("b3", "b", CardPortion.ofHundredths(1))), null, false);
    assertThat(overDept.waiting().get().message()).isEqualTo("queue dept (above b): gpu 3 held + 0.01 asked > limit 3");
    assertThat(engine.queueAllocations())
        .extracting(QueueAllocation::queue, QueueAllocation::subtreeGpuHundredths)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("dept", 300L),
            org.assertj.core.groups.Tuple.tuple("a", 200L),
            org.assertj.core.groups.Tuple.tuple("b", 100L));
  }

  @Test
  void aZeroLimitBlocksEveryGpuRequestAndAnAbsentLimitIsZero() {
    Engine engine = engine(1, 1);
    engine.upsertQueue(new QueueSpec("none", Optional.empty(), 100, Map.of()));
    assertThat(engine.filter(engine.compile(portion("p", "none", CardPortion.ofHundredths(1))), null, false).waiting().get().reason())
        .isEqualTo(Waiting.Reason.QUEUE_LIMIT);
  }

  @Test
  void reserveRefusesAStalePlacementThatWouldPassTheLimit() {
    Engine engine = engine(1, 4);
    engine.upsertQueue(queue("q", null, 1));
    Placement first = engine.filter(engine.compile(whole("p1", "q", 1)), null, false).placement().orElseThrow();
    Placement second = engine.filter(engine.compile(whole("p2", "q", 1)), null, false).placement().orElseThrow();
    assertThat(engine.reserve(first).reserved()).isTrue();
    ReserveResult refused = engine.reserve(second);
    assertThat(refused.status()).isEqualTo(ReserveResult.Status.CONFLICT);
    assertThat(refused.message()).isEqualTo("queue q: gpu 1 held + 1 asked > limit 1");
    assertThat(engine.grant(new PodRef("default", "p2"))).isEmpty();
    engine.release(new PodRef("default", "p1"));
    assertThat(engine.reserve(second).reserved()).isTrue();
  }

  @Test
  void aMemoryPortionIsChargedAtItsPortionOfTheCard() {
    Engine engine = engine(1, 1);
    engine.upsertQueue(queue("q", null, -1));
    place(engine, portion("p", "q", CardPortion.ofMemory(20480)));
    assertThat(engine.chargedGpuHundredths(new PodRef("default", "p"))).isEqualTo(51);
    assertThat(engine.chargedQueue(new PodRef("default", "p"))).contains("q");
  }

  @Test
  void removingAQueueKeepsItsPodsChargedUntilTheyLeave() {
    Engine engine = engine(1, 2);
    engine.upsertQueue(queue("q", null, -1));
    place(engine, whole("p", "q", 1));
    assertThat(engine.removeQueue("q")).isTrue();
    assertThat(engine.queues()).isEmpty();
    assertThat(engine.queueAllocations()).singleElement().satisfies(a -> {
      assertThat(a.spec()).isEmpty();
      assertThat(a.gpuHundredths()).isEqualTo(100);
    });
    assertThat(engine.filter(engine.compile(whole("p2", "q", 1)), null, false).waiting().get().reason()).isEqualTo(Waiting.Reason.QUEUE_MISSING);
    engine.release(new PodRef("default", "p"));
    assertThat(engine.queueAllocations()).isEmpty();
  }

  @Test
  void aRestoredPodIsChargedWhateverTheLimit() {
    Engine engine = engine(1, 2);
    engine.upsertQueue(queue("q", null, 0));
    Placement p = engine.filter(engine.compile(whole("p", null, 1)), null, false).placement().orElseThrow();
    assertThat(engine.restore(p.grant(), "q").reserved()).isTrue();
    assertThat(engine.queueAllocations().get(0).gpuHundredths()).isEqualTo(100);
  }

  @Test
  void aGrantTakenOverIsChargedToItsQueueOnlyWithinTheLimit() {
    Engine engine = engine(1, 2);
    engine.upsertQueue(queue("q", null, 1));
    Placement first = engine.filter(engine.compile(whole("a", null, 1)), null, false).placement().orElseThrow();
    assertThat(engine.reserve(first.grant(), "q").reserved()).isTrue();
    Placement second = engine.filter(engine.compile(whole("b", null, 1)), null, false).placement().orElseThrow();
    ReserveResult over = engine.reserve(second.grant(), "q");
    assertThat(over.reserved()).isFalse();
    assertThat(over.message()).isEqualTo("queue q: gpu 1 held + 1 asked > limit 1");
    assertThat(engine.grant(new PodRef("default", "b"))).isEmpty();
    assertThat(engine.chargedQueue(new PodRef("default", "a"))).contains("q");
    assertThat(engine.queueAllocations().get(0).gpuHundredths()).isEqualTo(100);
  }

  @Test
  void aGangIsReservedWholeOrNotAtAll() {
    Engine engine = engine(1, 2);
    engine.upsertQueue(queue("q", null, -1));
    List<CompiledRequest> three = List.of(
        engine.compile(whole("w0", "q", 1)), engine.compile(whole("w1", "q", 1)), engine.compile(whole("w2", "q", 1)));
    GangResult refused = engine.reserveGang(three, 3, null);
    assertThat(refused.reserved()).isFalse();
    assertThat(refused.waiting().reason()).isEqualTo(Waiting.Reason.GANG_INCOMPLETE);
    assertThat(refused.waiting().message()).isEqualTo("2 of 3 members fit, 3 needed; default/w2: fits on no node");
    assertThat(engine.grants()).isEmpty();
    assertThat(engine.queueAllocations().get(0).pods()).isZero();

    GangResult two = engine.reserveGang(three, 2, null);
    assertThat(two.reserved()).isTrue();
    assertThat(two.placed()).hasSize(2);
    assertThat(two.refused()).containsOnlyKeys(new PodRef("default", "w2"));
    assertThat(engine.grants()).hasSize(2);
  }

  @Test
  void aGangThatWouldPassItsQueueLimitHoldsNothing() {
    Engine engine = engine(2, 4);
    engine.upsertQueue(queue("q", null, 3));
    List<CompiledRequest> four = List.of(
        engine.compile(whole("w0", "q", 1)), engine.compile(whole("w1", "q", 1)),
        engine.compile(whole("w2", "q", 1)), engine.compile(whole("w3", "q", 1)));
    GangResult result = engine.reserveGang(four, 4, null);
    assertThat(result.reserved()).isFalse();
    assertThat(result.refused().get(new PodRef("default", "w3"))).isEqualTo("queue q: gpu 3 held + 1 asked > limit 3");
    assertThat(engine.grants()).isEmpty();
    assertThat(engine.queueAllocations().get(0).gpuHundredths()).isZero();
  }
}
