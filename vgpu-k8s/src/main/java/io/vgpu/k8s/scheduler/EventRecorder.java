package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records core/v1 Events on pods, as {@code kubectl describe pod} shows them. Recording is best effort:
 * a failure is logged, never propagated into scheduling. Events are written by a thread of their own,
 * as client-go's recorder does, so that no filter or bind waits for an API round trip to report
 * itself; when the API server falls behind by more than {@value #QUEUE} events, new ones are dropped.
 */
public final class EventRecorder {
  private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
  /** Event messages are capped by the API server; keep ours well within it. */
  private static final int MAX_MESSAGE = 1024;
  private static final int QUEUE = 1024;

  private final ApiWrites writes;
  private final String component;
  private final Clock clock;
  private final AtomicLong sequence = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final ThreadPoolExecutor writer;

  /** A recorder reporting as {@code component} (e.g. {@code vgpu-scheduler}). */
  public EventRecorder(KubernetesClient client, String component, Clock clock) {
    this.writes = new ApiWrites(client);
    this.component = component;
    this.clock = clock;
    this.writer =
        new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(QUEUE), r -> {
          Thread t = new Thread(r, "vgpu-events");
          t.setDaemon(true);
          return t;
        });
    // An idle recorder holds no thread.
    this.writer.allowCoreThreadTimeOut(true);
  }

  /** Records a Normal event. */
  public void normal(Pod pod, String reason, String message) {
    record(pod, "Normal", reason, message);
  }

  /** Records a Warning event. */
  public void warning(Pod pod, String reason, String message) {
    record(pod, "Warning", reason, message);
  }

  /**
   * Records a Warning event on any object, e.g. a cluster-scoped KAI Queue: its Event lives in the
   * object's namespace, or in {@code default} for a cluster-scoped one, as client-go records them.
   */
  public void warning(ObjectReference involved, String reason, String message) {
    String namespace = involved.getNamespace() == null || involved.getNamespace().isEmpty() ? "default" : involved.getNamespace();
    write(namespace, involved.getName(), involved, "Warning", reason, message);
  }

  private void record(Pod pod, String type, String reason, String message) {
    ObjectReference involved =
        new ObjectReferenceBuilder()
            .withApiVersion("v1")
            .withKind("Pod")
            .withName(pod.getMetadata().getName())
            .withNamespace(pod.getMetadata().getNamespace())
            .withUid(pod.getMetadata().getUid())
            .build();
    write(pod.getMetadata().getNamespace(), pod.getMetadata().getName(), involved, type, reason, message);
  }

  private void write(String namespace, String name, ObjectReference involved, String type, String reason, String message) {
    String now = clock.instant().truncatedTo(ChronoUnit.SECONDS).toString();
    String text = message.length() > MAX_MESSAGE ? message.substring(0, MAX_MESSAGE - 3) + "..." : message;
    Event event =
        new EventBuilder()
            .withNewMetadata()
            .withName(name + "." + Long.toHexString(Instant.now().toEpochMilli()) + sequence.incrementAndGet())
            .withNamespace(namespace)
            .endMetadata()
            .withInvolvedObject(involved)
            .withType(type)
            .withReason(reason)
            .withMessage(text)
            .withNewSource()
            .withComponent(component)
            .endSource()
            .withFirstTimestamp(now)
            .withLastTimestamp(now)
            .withCount(1)
            .build();
    try {
      writer.execute(() -> {
        try {
          writes.create(namespace, "events", event);
        } catch (KubernetesClientException e) {
          LOG.debug("could not record {} event on {}/{}: {}", reason, namespace, name, e.getMessage());
        }
      });
    } catch (RejectedExecutionException e) {
      if (dropped.incrementAndGet() % QUEUE == 1) {
        LOG.warn("the API server is behind on Events: {} dropped so far", dropped.get());
      }
    }
  }

  /** Stops writing; Events not written yet are dropped. */
  public void close() {
    writer.shutdownNow();
  }
}
