package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class DecisionWritesTest {
  private static final PodRef POD = new PodRef("team-a", "p1");
  private static final PodRef OTHER = new PodRef("team-a", "p2");

  private final DecisionWrites writes = new DecisionWrites();
  private final List<String> sent = new ArrayList<>();

  private CompletableFuture<Void> write(PodRef pod, String name, CompletableFuture<Void> answer, List<Throwable> failures) {
    return writes.write(
        pod,
        decision(name),
        () -> {
          sent.add(name);
          return answer;
        },
        failures::add);
  }

  /** A decision that names the write it belongs to in its node annotation. */
  private static DecisionWrites.Decision decision(String name) {
    return new DecisionWrites.Decision("uid-1", Map.of(HamiAnnotations.ASSIGNED_NODE, name), Map.of(HamiAnnotations.ASSIGNED_NODE, name));
  }

  @Test
  void aPodsWritesAreSentOneAfterAnotherInTheOrderTheyWereMade() {
    CompletableFuture<Void> first = new CompletableFuture<>();
    CompletableFuture<Void> second = new CompletableFuture<>();
    List<Throwable> failures = new ArrayList<>();
    CompletableFuture<Void> firstDone = write(POD, "first", first, failures);
    CompletableFuture<Void> secondDone = write(POD, "second", second, failures);
    assertThat(sent).containsExactly("first");
    assertThat(writes.pending(POD)).isSameAs(secondDone);

    first.complete(null);
    assertThat(firstDone).isCompleted();
    assertThat(sent).containsExactly("first", "second");
    assertThat(writes.pending(POD)).isSameAs(secondDone).isNotDone();

    second.complete(null);
    assertThat(secondDone).isCompleted();
    assertThat(writes.pending(POD)).isCompleted();
    assertThat(failures).isEmpty();
  }

  @Test
  void anotherPodsWriteDoesNotWait() {
    write(POD, "p1", new CompletableFuture<>(), new ArrayList<>());
    CompletableFuture<Void> other = write(OTHER, "p2", CompletableFuture.completedFuture(null), new ArrayList<>());
    assertThat(sent).containsExactly("p1", "p2");
    assertThat(other).isCompleted();
    assertThat(writes.pending(POD)).isNotDone();
    assertThat(writes.pending(OTHER)).isCompleted();
  }

  @Test
  void aFailedLatestWriteRunsItsHandlerBeforeItsFutureFails() {
    CompletableFuture<Void> answer = new CompletableFuture<>();
    AtomicReference<String> seenByHandler = new AtomicReference<>();
    CompletableFuture<Void>[] done = new CompletableFuture[1];
    done[0] = writes.write(POD, decision("only"), () -> answer, e -> seenByHandler.set(e.getMessage() + ", future done: " + done[0].isDone()));
    answer.completeExceptionally(new IllegalStateException("HTTP 500"));
    assertThat(seenByHandler.get()).isEqualTo("HTTP 500, future done: false");
    assertThat(done[0]).isCompletedExceptionally();
    // Over: a bind that comes later reads the pod as the API server has it.
    assertThat(writes.pending(POD)).isCompleted().isNotCompletedExceptionally();
  }

  @Test
  void aFailedWriteWithALaterOneBehindItRollsNothingBackAndTheLaterOneIsStillSent() {
    CompletableFuture<Void> first = new CompletableFuture<>();
    List<Throwable> firstFailures = new ArrayList<>();
    List<Throwable> secondFailures = new ArrayList<>();
    CompletableFuture<Void> firstDone = write(POD, "first", first, firstFailures);
    CompletableFuture<Void> secondDone = write(POD, "second", CompletableFuture.completedFuture(null), secondFailures);
    first.completeExceptionally(new IllegalStateException("timed out"));
    assertThat(firstDone).isCompletedExceptionally();
    assertThat(firstFailures).isEmpty();
    assertThat(sent).containsExactly("first", "second");
    assertThat(secondDone).isCompleted().isNotCompletedExceptionally();
    assertThat(secondFailures).isEmpty();
  }

  @Test
  void aWriteThatCannotEvenStartFailsLikeOneRefused() {
    List<Throwable> failures = new ArrayList<>();
    CompletableFuture<Void> done = writes.write(POD, decision("only"), () -> {
      throw new IllegalArgumentException("no such pod path");
    }, failures::add);
    assertThat(done).isCompletedExceptionally();
    assertThat(failures).extracting(Throwable::getMessage).containsExactly("no such pod path");
  }

  @Test
  void onlyTheLatestWriteThatSucceededIsKeptUntilForgotten() {
    CompletableFuture<Void> first = new CompletableFuture<>();
    CompletableFuture<Void> second = new CompletableFuture<>();
    write(POD, "first", first, new ArrayList<>());
    write(POD, "second", second, new ArrayList<>());
    assertThat(writes.written(POD)).as("nothing written yet").isEmpty();
    first.complete(null);
    assertThat(writes.written(POD)).as("a write with a later one behind it").isEmpty();
    second.complete(null);
    assertThat(writes.written(POD).map(d -> d.annotations().get(HamiAnnotations.ASSIGNED_NODE))).contains("second");
    assertThat(writes.written(OTHER)).isEmpty();

    write(POD, "third", new CompletableFuture<>(), new ArrayList<>());
    assertThat(writes.written(POD)).as("a new write under way: the pod will carry another decision").isEmpty();
  }

  @Test
  void aFailedWriteKeepsNothingAndForgetDropsWhatWasKept() {
    write(POD, "failed", CompletableFuture.failedFuture(new IllegalStateException("HTTP 409")), new ArrayList<>());
    assertThat(writes.written(POD)).isEmpty();
    write(POD, "ok", CompletableFuture.completedFuture(null), new ArrayList<>());
    assertThat(writes.written(POD)).isPresent();
    writes.forget(POD);
    assertThat(writes.written(POD)).isEmpty();
  }

  @Test
  void aDecisionLeavesACopyOfThePodWithItsAnnotationsAndLabelsAndChangesNothingOfTheOriginal() {
    Pod cached =
        new PodBuilder().withNewMetadata().withName("p1").withNamespace("team-a").withUid("uid-1")
            .withAnnotations(new HashMap<>(Map.of("team", "a", HamiAnnotations.ASSIGNED_NODE, "old", "kai.scheduler/waiting", "queue full")))
            .withLabels(new HashMap<>(Map.of("app", "web"))).endMetadata()
            .withNewSpec().addNewContainer().withName("main").endContainer().endSpec()
            .build();
    Map<String, String> set = new HashMap<>();
    set.put(HamiAnnotations.ASSIGNED_NODE, "n1");
    set.put(HamiAnnotations.DEVICES_ALLOCATED, "GPU-a,NVIDIA,4096,100:;");
    set.put("kai.scheduler/waiting", null);
    DecisionWrites.Decision decision = new DecisionWrites.Decision("uid-1", set, Map.of(HamiAnnotations.ASSIGNED_NODE, "n1"));

    Pod written = decision.onto(cached).orElseThrow();
    assertThat(written.getMetadata().getAnnotations())
        .containsOnly(Map.entry("team", "a"), Map.entry(HamiAnnotations.ASSIGNED_NODE, "n1"), Map.entry(HamiAnnotations.DEVICES_ALLOCATED, "GPU-a,NVIDIA,4096,100:;"));
    assertThat(written.getMetadata().getLabels()).containsOnly(Map.entry("app", "web"), Map.entry(HamiAnnotations.ASSIGNED_NODE, "n1"));
    assertThat(written.getMetadata().getUid()).isEqualTo("uid-1");
    assertThat(written.getSpec()).isSameAs(cached.getSpec());
    assertThat(cached.getMetadata().getAnnotations()).containsEntry(HamiAnnotations.ASSIGNED_NODE, "old").containsKey("kai.scheduler/waiting");
    assertThat(cached.getMetadata().getLabels()).containsOnlyKeys("app");
  }

  @Test
  void aDecisionForAnotherPodOfTheSameNameLeavesNothing() {
    Pod successor = new PodBuilder().withNewMetadata().withName("p1").withNamespace("team-a").withUid("uid-2").endMetadata().build();
    assertThat(decision("n1").onto(successor)).isEqualTo(Optional.empty());
    Pod unknown = new PodBuilder().withNewMetadata().withName("p1").withNamespace("team-a").endMetadata().build();
    assertThat(decision("n1").onto(unknown)).isEmpty();
    assertThat(new DecisionWrites.Decision("", Map.of(), Map.of()).onto(unknown)).as("a decision written without a UID").isEmpty();
  }
}
