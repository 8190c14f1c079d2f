package io.vgpu.examples.lab;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodRefs;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Watches the pods that wait for a queue or gang when vgpu schedules KAI's pods: those unbound with
 * {@value KaiKeys#WAITING_ANNOTATION}, and how many times each lost it (the scheduler's way of asking
 * kube-scheduler to try a pod again when a Queue or PodGroup changes). Inert when the run does not speak
 * KAI's dialect.
 */
final class WaitingPodWatch implements AutoCloseable {
  private final KubernetesClient client;
  private final @Nullable SharedIndexInformer<Pod> pods;
  /** Per pod UID, how many times its annotation went away. */
  private final Map<String, Integer> woken = new ConcurrentHashMap<>();

  WaitingPodWatch(KubernetesClient client, boolean active) {
    this.client = client;
    this.pods = active ? client.pods().inAnyNamespace().inform(new Handler(), 0) : null;
  }

  private final class Handler implements ResourceEventHandler<Pod> {
    @Override
    public void onAdd(Pod pod) {}

    @Override
    public void onUpdate(Pod before, Pod after) {
      if (waits(before) && PodRefs.annotations(after).get(KaiKeys.WAITING_ANNOTATION) == null) {
        woken.merge(after.getMetadata().getUid(), 1, Integer::sum);
      }
    }

    @Override
    public void onDelete(Pod pod, boolean finalStateUnknown) {
      woken.merge(pod.getMetadata().getUid(), 1, Integer::sum);
    }
  }

  private static boolean waits(Pod pod) {
    boolean bound = pod.getSpec() != null && pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty();
    return !bound && PodRefs.annotations(pod).get(KaiKeys.WAITING_ANNOTATION) != null;
  }

  /** The pods waiting now as the API server has them, by UID, with how many times each was woken so far. */
  Map<String, Integer> waiting() {
    Map<String, Integer> out = new ConcurrentHashMap<>();
    if (pods != null) {
      for (Pod pod : client.pods().inAnyNamespace().list().getItems()) {
        if (waits(pod)) {
          out.put(pod.getMetadata().getUid(), woken.getOrDefault(pod.getMetadata().getUid(), 0));
        }
      }
    }
    return out;
  }

  /** Whether every pod of {@code before} was woken (or bound, or deleted) since. */
  boolean wokenSince(Map<String, Integer> before) {
    return stillWaiting(before).isEmpty();
  }

  /** The pods of {@code before} not woken since, as {@code namespace/name}. */
  List<String> stillWaiting(Map<String, Integer> before) {
    List<String> out = new ArrayList<>();
    if (pods == null) {
      return out;
    }
    before.forEach((uid, count) -> {
      if (woken.getOrDefault(uid, 0) > count) {
        return;
      }
      pods.getStore().list().stream().filter(p -> uid.equals(p.getMetadata().getUid())).findFirst()
          .filter(WaitingPodWatch::waits)
          .ifPresent(p -> out.add(PodRefs.of(p).toString()));
    });
    return out;
  }

  @Override
  public void close() {
    if (pods != null) {
      pods.close();
    }
  }
}
