package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records core/v1 Events on pods, as {@code kubectl describe pod} shows them. Recording is best effort:
 * a failure is logged, never propagated into scheduling.
 */
public final class EventRecorder {
  private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
  /** Event messages are capped by the API server; keep ours well within it. */
  private static final int MAX_MESSAGE = 1024;

  private final KubernetesClient client;
  private final String component;
  private final Clock clock;
  private final AtomicLong sequence = new AtomicLong();

  /** A recorder reporting as {@code component} (e.g. {@code vgpu-scheduler}). */
  public EventRecorder(KubernetesClient client, String component, Clock clock) {
    this.client = client;
    this.component = component;
    this.clock = clock;
  }

  /** Records a Normal event. */
  public void normal(Pod pod, String reason, String message) {
    record(pod, "Normal", reason, message);
  }

  /** Records a Warning event. */
  public void warning(Pod pod, String reason, String message) {
    record(pod, "Warning", reason, message);
  }

  private void record(Pod pod, String type, String reason, String message) {
    String namespace = pod.getMetadata().getNamespace();
    String now = clock.instant().truncatedTo(ChronoUnit.SECONDS).toString();
    String text = message.length() > MAX_MESSAGE ? message.substring(0, MAX_MESSAGE - 3) + "..." : message;
    Event event =
        new EventBuilder()
            .withNewMetadata()
            .withName(pod.getMetadata().getName() + "." + Long.toHexString(Instant.now().toEpochMilli()) + sequence.incrementAndGet())
            .withNamespace(namespace)
            .endMetadata()
            .withNewInvolvedObject()
            .withApiVersion("v1")
            .withKind("Pod")
            .withName(pod.getMetadata().getName())
            .withNamespace(namespace)
            .withUid(pod.getMetadata().getUid())
            .endInvolvedObject()
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
      client.v1().events().inNamespace(namespace).resource(event).create();
    } catch (KubernetesClientException e) {
      LOG.debug("could not record {} event on {}/{}: {}", reason, namespace, pod.getMetadata().getName(), e.getMessage());
    }
  }
}
