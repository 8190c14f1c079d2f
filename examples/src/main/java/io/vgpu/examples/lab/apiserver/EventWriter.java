package io.vgpu.examples.lab.apiserver;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Writes core/v1 Events about pods as kube-scheduler and kubelet do: one Event object per (pod,
 * reason, message), its {@code count} raised when the same thing happens again.
 */
public final class EventWriter {
  private final KubernetesClient client;
  private final String component;
  private final Map<String, String> names = new ConcurrentHashMap<>();

  /**
   * A writer.
   *
   * @param component the {@code source.component} of its Events, e.g. {@code default-scheduler}
   */
  public EventWriter(KubernetesClient client, String component) {
    this.client = client;
    this.component = component;
  }

  /** Records a Warning Event. */
  public void warning(Pod pod, String reason, String message) {
    record(pod, "Warning", reason, message);
  }

  /** Records a Normal Event. */
  public void normal(Pod pod, String reason, String message) {
    record(pod, "Normal", reason, message);
  }

  private void record(Pod pod, String type, String reason, String message) {
    String namespace = pod.getMetadata().getNamespace();
    String key = namespace + "/" + pod.getMetadata().getName() + "/" + pod.getMetadata().getUid() + "/" + reason + "/" + message;
    String now = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
    try {
      String existing = names.get(key);
      if (existing != null) {
        Event event = client.v1().events().inNamespace(namespace).withName(existing).get();
        if (event != null) {
          event.setCount(event.getCount() == null ? 2 : event.getCount() + 1);
          event.setLastTimestamp(now);
          client.v1().events().inNamespace(namespace).resource(event).update();
          return;
        }
      }
      String name = pod.getMetadata().getName() + "." + Long.toHexString(System.nanoTime());
      Event event =
          new EventBuilder()
              .withNewMetadata().withName(name).withNamespace(namespace).endMetadata()
              .withInvolvedObject(new ObjectReferenceBuilder().withApiVersion("v1").withKind("Pod").withNamespace(namespace)
                  .withName(pod.getMetadata().getName()).withUid(pod.getMetadata().getUid()).build())
              .withType(type)
              .withReason(reason)
              .withMessage(message)
              .withCount(1)
              .withFirstTimestamp(now)
              .withLastTimestamp(now)
              .withNewSource().withComponent(component).endSource()
              .withReportingComponent(component)
              .build();
      client.v1().events().inNamespace(namespace).resource(event).create();
      names.put(key, name);
    } catch (KubernetesClientException e) {
      // an Event is best effort, as in Kubernetes
    }
  }
}
