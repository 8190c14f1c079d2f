package io.vgpu.k8s.scheduler;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Timeouts of the scheduler's futures, each write's and each wait's, on one timer thread of vgpu's
 * own. {@link CompletableFuture#orTimeout} would do the same on whatever the JDK picks: JDK 17 a
 * timer thread much like this one, JDK 21 and later the common pool's delay scheduler, whose thread
 * is woken for every timeout set and again for every one cancelled (0.24 ms of CPU per pod at 5,000
 * nodes on JDK 25, where the scheduler sets one per API write). Here a timeout wakes the timer only
 * when it is due before every other timeout pending, and is taken out of the queue when its future
 * completes first, as nearly all do.
 */
final class Timeouts {
  private static final ScheduledThreadPoolExecutor TIMER = timer();

  private Timeouts() {}

  /**
   * {@code future}, failed with a {@link TimeoutException} if it is not done after {@code timeout};
   * the same future, as {@link CompletableFuture#orTimeout} returns.
   */
  static <T> CompletableFuture<T> orTimeout(CompletableFuture<T> future, long timeout, TimeUnit unit) {
    return after(future, timeout, unit, () -> {
      future.completeExceptionally(new TimeoutException());
    });
  }

  /**
   * {@code future}, completed with {@code value} if it is not done after {@code timeout}; the same
   * future, as {@link CompletableFuture#completeOnTimeout} returns.
   */
  static <T> CompletableFuture<T> completeOnTimeout(CompletableFuture<T> future, T value, long timeout, TimeUnit unit) {
    return after(future, timeout, unit, () -> {
      future.complete(value);
    });
  }

  private static <T> CompletableFuture<T> after(CompletableFuture<T> future, long timeout, TimeUnit unit, Runnable expire) {
    if (future.isDone()) {
      return future;
    }
    // The expiry runs the future's dependents, which may block: they get a thread of the JDK's
    // asynchronous pool, as CompletableFuture's own timeouts do, and the timer stays free.
    ScheduledFuture<?> due = TIMER.schedule(() -> CompletableFuture.runAsync(expire), timeout, unit);
    future.whenComplete((value, failure) -> {
      if (!due.isDone()) {
        due.cancel(false);
      }
    });
    return future;
  }

  /** Timeouts set and neither due nor cancelled yet. */
  static int pending() {
    return TIMER.getQueue().size();
  }

  private static ScheduledThreadPoolExecutor timer() {
    ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, task -> {
      Thread thread = new Thread(task, "vgpu-timeouts");
      thread.setDaemon(true);
      return thread;
    });
    // A cancelled timeout leaves the queue at once, not at its deadline: writes complete in
    // milliseconds and their timeouts are seconds long.
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }
}
