package io.vgpu.k8s.testing;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import java.time.Instant;

/** The scheduler's node lock as its bind leaves it, written by tests that play the scheduler. */
public final class NodeLocks {
  private static final int ATTEMPTS = 10;

  private NodeLocks() {}

  /**
   * Annotates the node with a lock held for the pod. The node agent under test writes the node too (its
   * registration and handshake), so an edit can meet a newer version (409): it is retried on the latest,
   * as any API client does.
   */
  public static void lockFor(KubernetesClient client, String node, String namespace, String pod) {
    for (int attempt = 1; ; attempt++) {
      try {
        client.nodes().withName(node).edit(n -> new NodeBuilder(n).editMetadata()
            .addToAnnotations(HamiAnnotations.NODE_LOCK, NodeLockCodec.encode(Instant.now(), namespace, pod)).endMetadata().build());
        return;
      } catch (KubernetesClientException e) {
        if (e.getCode() != 409 || attempt == ATTEMPTS) {
          throw e;
        }
      }
    }
  }
}
