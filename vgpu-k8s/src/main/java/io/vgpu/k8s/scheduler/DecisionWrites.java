package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.PodRef;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

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
 *
 * <p>What the pod's latest write set, once the API server took it, is kept until the bind is over
 * ({@link #written}): the bind usually comes before the informer has seen the write, and reads the pod
 * as the write left it instead of asking the API server for it again.
 */
final class DecisionWrites {
  private static final CompletableFuture<Void> NONE = CompletableFuture.completedFuture(null);
  /** A written decision no bind came for is dropped after this long (kube-scheduler gave the pod up). */
  private static final long KEPT_NANOS = TimeUnit.MINUTES.toNanos(10);
  /** Dropping old written decisions is looked into once this many are kept. */
  private static final int PRUNE_ABOVE = 1_024;

  /**
   * What one decision write sets on a pod.
   *
   * @param podUid the UID of the pod the decision is for (the write is for that pod only)
   * @param annotations the annotations it sets; a null value removes the annotation
   * @param labels the labels it sets
   */
  record Decision(String podUid, Map<String, @Nullable String> annotations, Map<String, String> labels) {
    Decision {
      annotations = Collections.unmodifiableMap(new LinkedHashMap<>(annotations));
      labels = Map.copyOf(labels);
    }

    /**
     * {@code pod} as this decision leaves it: a copy whose annotations and labels carry the decision,
     * sharing the spec and status of {@code pod}, which is not changed. Empty when {@code pod} is another
     * pod of the same name (its UID is not the decision's).
     */
    Optional<Pod> onto(Pod pod) {
      ObjectMeta meta = pod.getMetadata();
      if (meta == null || podUid.isEmpty() || !podUid.equals(meta.getUid())) {
        return Optional.empty();
      }
      ObjectMeta out = LeanStore.copyOf(meta);
      Map<String, String> annotated = out.getAnnotations() == null ? new LinkedHashMap<>() : out.getAnnotations();
      annotations.forEach((key, value) -> {
        if (value == null) {
          annotated.remove(key);
        } else {
          annotated.put(key, value);
        }
      });
      out.setAnnotations(annotated);
      Map<String, String> labelled = out.getLabels() == null ? new LinkedHashMap<>() : out.getLabels();
      labelled.putAll(labels);
      out.setLabels(labelled);
      Pod copy = new Pod();
      copy.setApiVersion(pod.getApiVersion());
      copy.setKind(pod.getKind());
      copy.setMetadata(out);
      copy.setSpec(pod.getSpec());
      copy.setStatus(pod.getStatus());
      return Optional.of(copy);
    }
  }

  /** The latest write of each pod whose writes are not all over yet. */
  private final Map<PodRef, CompletableFuture<Void>> latest = new ConcurrentHashMap<>();
  /** The decision of each pod's latest write, once written, until its bind is over. */
  private final Map<PodRef, Written> written = new ConcurrentHashMap<>();

  /** When old written decisions were last dropped. */
  private volatile long prunedAtNanos = System.nanoTime();

  private record Written(Decision decision, long atNanos) {}

  /**
   * Sends one decision of {@code pod} once its earlier writes are over.
   *
   * @param decision what the write sets on the pod
   * @param send starts the write and returns its outcome
   * @param failedLatest runs when the write fails and no later write of the pod has been made
   * @return completes when the write is over: normally when written, with its failure otherwise
   */
  CompletableFuture<Void> write(PodRef pod, Decision decision, Supplier<CompletableFuture<Void>> send, Consumer<Throwable> failedLatest) {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    CompletableFuture<Void> before = latest.put(pod, mine);
    // An older decision no longer says what the pod will carry.
    written.remove(pod);
    CompletableFuture<?> turn = before == null ? NONE : before.exceptionally(e -> null);
    turn.thenCompose(ignored -> send.get())
        .whenComplete(
            (ok, failure) -> {
              boolean wasLatest = latest.remove(pod, mine);
              if (failure == null) {
                if (wasLatest) {
                  keep(pod, decision);
                }
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

  /**
   * The decision the pod's latest write set, when that write succeeded and nothing has been written for
   * the pod since; empty once {@link #forget} was called for it.
   */
  Optional<Decision> written(PodRef pod) {
    Written w = written.get(pod);
    return w == null ? Optional.empty() : Optional.of(w.decision());
  }

  /** Drops what is kept of the pod's written decision: its bind is over. */
  void forget(PodRef pod) {
    written.remove(pod);
  }

  private void keep(PodRef pod, Decision decision) {
    long now = System.nanoTime();
    written.put(pod, new Written(decision, now));
    if (written.size() > PRUNE_ABOVE && now - prunedAtNanos > TimeUnit.SECONDS.toNanos(1)) {
      prunedAtNanos = now;
      for (Iterator<Written> it = written.values().iterator(); it.hasNext(); ) {
        if (now - it.next().atNanos() > KEPT_NANOS) {
          it.remove();
        }
      }
    }
  }
}
