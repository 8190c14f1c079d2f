package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.k8s.pod.PodJson;
import java.io.StringWriter;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JsonGenerator;

/**
 * Records core/v1 Events on pods, as {@code kubectl describe pod} shows them. Recording is best effort:
 * a failure is logged, never propagated into scheduling, and no filter or bind waits for an API round
 * trip to report itself. Events are written one at a time, in the order recorded: the caller sends one
 * when none is on its way, and each answer sends the next, on the HTTP client's thread. No thread of
 * the recorder's own stands between (one cost two thread wake-ups per Event, two Events per scheduled
 * pod). When the API server falls behind by more than {@value #QUEUE} Events, new ones are dropped.
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
  /** The Events behind the one on its way; a full queue drops new ones. */
  private final BlockingQueue<PendingEvent> pending;
  /** Whether an Event is on its way to the API server. */
  private final AtomicBoolean writing = new AtomicBoolean();
  private volatile boolean closed;

  /**
   * An Event recorded and not yet sent, as the JSON to send. Made by the caller: the loop that sends
   * stays small, which the JIT compiles in a moment (with the JSON's writing inlined into it, that
   * compilation took half a second of a cold scheduler's 200-pod burst).
   */
  private record PendingEvent(String namespace, String name, String reason, String json) {}

  /** A recorder reporting as {@code component} (e.g. {@code vgpu-scheduler}). */
  public EventRecorder(KubernetesClient client, String component, Clock clock) {
    this(client, component, clock, QUEUE);
  }

  /** A recorder that keeps at most {@code queue} Events waiting behind the one on its way. */
  EventRecorder(KubernetesClient client, String component, Clock clock, int queue) {
    this.writes = new ApiWrites(client);
    this.component = component;
    this.clock = clock;
    this.pending = new ArrayBlockingQueue<>(queue);
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
    ObjectReference involved = new ObjectReference();
    involved.setApiVersion("v1");
    involved.setKind("Pod");
    involved.setName(pod.getMetadata().getName());
    involved.setNamespace(pod.getMetadata().getNamespace());
    involved.setUid(pod.getMetadata().getUid());
    write(pod.getMetadata().getNamespace(), pod.getMetadata().getName(), involved, type, reason, message);
  }

  private void write(String namespace, String name, ObjectReference involved, String type, String reason, String message) {
    if (closed) {
      return;
    }
    String eventName = name + "." + Long.toHexString(Instant.now().toEpochMilli()) + sequence.incrementAndGet();
    if (!pending.offer(new PendingEvent(namespace, name, reason, json(eventName, namespace, involved, type, reason, message, clock.instant())))) {
      if (dropped.incrementAndGet() % QUEUE == 1) {
        LOG.warn("the API server is behind on Events: {} dropped so far", dropped.get());
      }
      return;
    }
    sendNext();
  }

  /**
   * Sends the oldest waiting Event unless one is on its way. An answer that has come by the time the
   * write returns (a refusal before any I/O) is settled here, in the loop, so that a run of them never
   * deepens the stack.
   */
  private void sendNext() {
    while (!closed && !pending.isEmpty() && writing.compareAndSet(false, true)) {
      PendingEvent next = pending.poll();
      if (next == null) {
        writing.set(false);
        continue;
      }
      CompletableFuture<Void> sent;
      try {
        sent = writes.createAsync(next.namespace(), "events", next.json());
      } catch (RuntimeException e) {
        sent = CompletableFuture.failedFuture(e);
      }
      if (sent.isDone()) {
        settled(next, sent.handle((v, e) -> e).join());
        continue;
      }
      sent.whenComplete((v, e) -> {
        settled(next, e);
        sendNext();
      });
    }
  }

  private void settled(PendingEvent event, @Nullable Throwable failure) {
    if (failure != null) {
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
      LOG.debug("could not record {} event on {}/{}: {}", event.reason(), event.namespace(), event.name(), cause.getMessage());
    }
    writing.set(false);
  }

  /**
   * A core/v1 Event's JSON: a message over {@value #MAX_MESSAGE} characters is cut, the timestamps are
   * whole seconds, and an absent field of the involved object is left out.
   */
  String json(String eventName, String namespace, ObjectReference involved, String type, String reason, String message, Instant at) {
    String now = at.truncatedTo(ChronoUnit.SECONDS).toString();
    String text = message.length() > MAX_MESSAGE ? message.substring(0, MAX_MESSAGE - 3) + "..." : message;
    StringWriter out = new StringWriter(256 + text.length());
    try (JsonGenerator g = PodJson.mapper().createGenerator(out)) {
      g.writeStartObject();
      g.writeStringProperty("apiVersion", "v1");
      g.writeStringProperty("kind", "Event");
      g.writeObjectPropertyStart("metadata");
      g.writeStringProperty("name", eventName);
      g.writeStringProperty("namespace", namespace);
      g.writeEndObject();
      g.writeNumberProperty("count", 1);
      g.writeStringProperty("firstTimestamp", now);
      g.writeObjectPropertyStart("involvedObject");
      optional(g, "apiVersion", involved.getApiVersion());
      optional(g, "kind", involved.getKind());
      optional(g, "name", involved.getName());
      optional(g, "namespace", involved.getNamespace());
      optional(g, "uid", involved.getUid());
      g.writeEndObject();
      g.writeStringProperty("lastTimestamp", now);
      g.writeStringProperty("message", text);
      g.writeStringProperty("reason", reason);
      g.writeObjectPropertyStart("source");
      g.writeStringProperty("component", component);
      g.writeEndObject();
      g.writeStringProperty("type", type);
      g.writeEndObject();
    }
    return out.toString();
  }

  private static void optional(JsonGenerator g, String name, @Nullable String value) {
    if (value != null) {
      g.writeStringProperty(name, value);
    }
  }

  /** Stops writing; Events not sent yet are dropped. */
  public void close() {
    closed = true;
    pending.clear();
  }
}
