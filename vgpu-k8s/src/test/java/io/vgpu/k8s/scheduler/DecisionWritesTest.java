package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.PodRef;
import java.util.ArrayList;
import java.util.List;
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
        () -> {
          sent.add(name);
          return answer;
        },
        failures::add);
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
    done[0] = writes.write(POD, () -> answer, e -> seenByHandler.set(e.getMessage() + ", future done: " + done[0].isDone()));
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
    CompletableFuture<Void> done = writes.write(POD, () -> {
      throw new IllegalArgumentException("no such pod path");
    }, failures::add);
    assertThat(done).isCompletedExceptionally();
    assertThat(failures).extracting(Throwable::getMessage).containsExactly("no such pod path");
  }
}
