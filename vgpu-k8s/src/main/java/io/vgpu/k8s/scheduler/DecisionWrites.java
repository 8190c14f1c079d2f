package io.vgpu.k8s.scheduler;

import io.vgpu.api.PodRef;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The filter's decision writes, sent behind its answer. The filter reserves, answers kube-scheduler and
 * leaves the pod's patch here; the bind waits for it before it reads the pod, and refuses when it
 * failed. Waiting for the API server inside the filter was most of the filter's tail at 5,000 nodes,
 * and kube-scheduler needs nothing from the write until it binds.
 *
 * <p>Writes for one pod are sent in the order they were made, each after the one before has ended, so a
 * pod filtered again never ends with its older decision; writes for different pods are independent. A
 * write that fails while it is still the pod's latest runs its failure handler (which gives the
 * reservation back) before its future completes, so a bind that waited on it sees the rollback done.
 */
final class DecisionWrites {
  private static final CompletableFuture<Void> NONE = CompletableFuture.completedFuture(null);

  /** The latest write of each pod whose writes are not all over yet. */
  private final Map<PodRef, CompletableFuture<Void>> latest = new ConcurrentHashMap<>();

  /**
   * Sends one decision of {@code pod} once its earlier writes are over.
   *
   * @param send starts the write and returns its outcome
   * @param failedLatest runs when the write fails and no later write of the pod has been made
   * @return completes when the write is over: normally when written, with its failure otherwise
   */
  CompletableFuture<Void> write(PodRef pod, Supplier<CompletableFuture<Void>> send, Consumer<Throwable> failedLatest) {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    CompletableFuture<Void> before = latest.put(pod, mine);
    CompletableFuture<?> turn = before == null ? NONE : before.exceptionally(e -> null);
    turn.thenCompose(ignored -> send.get())
        .whenComplete(
            (ok, failure) -> {
              boolean wasLatest = latest.remove(pod, mine);
              if (failure == null) {
                mine.complete(null);
                return;
              }
              Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
              if (wasLatest) {
                try {
                  failedLatest.accept(cause);
                } catch (RuntimeException e) {
                  cause.addSuppressed(e);
                }
              }
              mine.completeExceptionally(cause);
            });
    return mine;
  }

  /** The pod's latest write while one is under way, else a completed future. */
  CompletableFuture<Void> pending(PodRef pod) {
    return latest.getOrDefault(pod, NONE);
  }
}
