package io.vgpu.k8s.scheduler;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/** Runs the scheduler client's informer work at once, or holds it until the test lets it run, in order. */
final class SteppedExecutor implements Executor {
  private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> new Thread(r, "stepped-informer"));
  private final Deque<Runnable> held = new ArrayDeque<>();
  private boolean holding;

  @Override
  public synchronized void execute(Runnable task) {
    if (holding) {
      held.addLast(task);
    } else {
      thread.execute(task);
    }
  }

  synchronized void hold() {
    holding = true;
  }

  /** Lets everything held run, in the order it came, then runs new work at once again. */
  void release() throws Exception {
    synchronized (this) {
      holding = false;
      while (!held.isEmpty()) {
        thread.execute(held.removeFirst());
      }
    }
    thread.submit(() -> {}).get(10, TimeUnit.SECONDS);
  }

  void close() {
    thread.shutdownNow();
  }
}
