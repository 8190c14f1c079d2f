package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Tries again the pods that wait for a queue or a gang, when a Queue or PodGroup changes. kube-scheduler
 * does not watch KAI's objects: a pod its extender turned down waits for a change of a pod or node, or for
 * its periodic flush minutes later. Removing the pod's {@value KaiKeys#WAITING_ANNOTATION} is a change of
 * the pod itself, which kube-scheduler answers by trying it again; its filter writes the annotation back if
 * it still waits. Only unbound pods that carry the annotation are touched, on a thread of their own, and
 * changes that arrive while a pass runs are folded into one more pass.
 */
final class WaitingPods {
  private static final Logger LOG = LoggerFactory.getLogger(WaitingPods.class);
  private static final String CLEAR = clearPatch();

  private final ApiWrites writes;
  private final ClusterLedger ledger;
  private final Executor executor;
  private final AtomicBoolean pending = new AtomicBoolean();

  WaitingPods(KubernetesClient client, ClusterLedger ledger, Executor executor) {
    this.writes = new ApiWrites(client);
    this.ledger = ledger;
    this.executor = executor;
  }

  private static String clearPatch() {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    patch.putObject("metadata").putObject("annotations").putNull(KaiKeys.WAITING_ANNOTATION);
    return patch.toString();
  }

  /** Asks for a pass over the waiting pods; returns at once. */
  void wake() {
    if (!pending.compareAndSet(false, true)) {
      return;
    }
    try {
      executor.execute(this::pass);
    } catch (RejectedExecutionException e) {
      pending.set(false); // shutting down
    }
  }

  private void pass() {
    pending.set(false);
    for (Pod pod : ledger.pods()) {
      boolean bound = pod.getSpec() != null && pod.getSpec().getNodeName() != null && !pod.getSpec().getNodeName().isEmpty();
      if (bound || PodRefs.annotations(pod).get(KaiKeys.WAITING_ANNOTATION) == null) {
        continue;
      }
      PodRef ref = PodRefs.of(pod);
      try {
        writes.patchPod(ref.namespace(), ref.name(), CLEAR);
      } catch (KubernetesClientException e) {
        LOG.debug("pod {}: could not ask for it to be tried again: {}", ref, e.getMessage());
      }
    }
  }
}
