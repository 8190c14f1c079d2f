package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The scheduler's timeouts fire as CompletableFuture's own do, and leave nothing behind when the future wins. */
class TimeoutsTest {
  @Test
  void aFutureNotDoneInTimeFailsWithATimeout() {
    CompletableFuture<String> write = new CompletableFuture<>();

    CompletableFuture<String> same = Timeouts.orTimeout(write, 20, TimeUnit.MILLISECONDS);

    assertThat(same).isSameAs(write);
    Throwable failure = catchThrowable(() -> write.get(5, TimeUnit.SECONDS));
    assertThat(failure).isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TimeoutException.class);
  }

  @Test
  void aWaitNotOverInTimeCompletesWithTheGivenValue() throws Exception {
    CompletableFuture<String> wait = new CompletableFuture<>();

    Timeouts.completeOnTimeout(wait, "timed out", 20, TimeUnit.MILLISECONDS);

    assertThat(wait.get(5, TimeUnit.SECONDS)).isEqualTo("timed out");
  }

  @Test
  void aFutureDoneFirstKeepsItsValueAndItsTimeoutLeavesTheQueue() throws Exception {
    // Other tests' writes may still have timeouts queued: count against what was there.
    int before = Timeouts.pending();
    CompletableFuture<String> write = new CompletableFuture<>();
    Timeouts.orTimeout(write, 1, TimeUnit.HOURS);
    CompletableFuture<String> wait = new CompletableFuture<>();
    Timeouts.completeOnTimeout(wait, "timed out", 1, TimeUnit.HOURS);

    write.complete("written");
    wait.complete("over");

    assertThat(write.get()).isEqualTo("written");
    assertThat(wait.get()).isEqualTo("over");
    long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (Timeouts.pending() > before && System.nanoTime() < until) {
      Thread.onSpinWait();
    }
    assertThat(Timeouts.pending()).as("hour-long timeouts of completed futures still queued").isLessThanOrEqualTo(before);
  }

  @Test
  void aFutureAlreadyDoneSetsNoTimeout() {
    int before = Timeouts.pending();

    Timeouts.orTimeout(CompletableFuture.completedFuture("written"), 1, TimeUnit.HOURS);

    assertThat(Timeouts.pending()).isLessThanOrEqualTo(before);
  }

  @Test
  void whatDependsOnAnExpiredFutureRunsOffTheTimerThread() throws Exception {
    CompletableFuture<String> write = new CompletableFuture<>();
    AtomicReference<String> ranOn = new AtomicReference<>();
    CompletableFuture<Void> dependent = write.handle((value, failure) -> {
      ranOn.set(Thread.currentThread().getName());
      return null;
    });

    Timeouts.orTimeout(write, 10, TimeUnit.MILLISECONDS);
    dependent.get(5, TimeUnit.SECONDS);

    assertThat(ranOn.get()).isNotEqualTo("vgpu-timeouts");
  }
}
