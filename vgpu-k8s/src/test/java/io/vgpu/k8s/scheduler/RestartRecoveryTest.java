package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.NodeUsage;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A scheduler stopped in the middle of a burst of 200 pods and replaced by a new one: the new ledger,
 * rebuilt from the API server alone, holds exactly the grants the old one held — none lost, none
 * duplicated — and scheduling carries on without over-committing a card.
 */
@EnableKubernetesMockClient(crud = true)
class RestartRecoveryTest {
  KubernetesClient client;
  ClusterHarness cluster;

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static Map<String, NodeUsage> byNode(List<NodeUsage> usage) {
    Map<String, NodeUsage> out = new HashMap<>();
    usage.forEach(u -> out.put(u.node(), u));
    return out;
  }

  @Test
  void aRestartMidBurstLosesAndDuplicatesNothing() throws Exception {
    cluster = new ClusterHarness(client);
    List<String> nodes = List.of("n0", "n1", "n2", "n3");
    for (int n = 0; n < nodes.size(); n++) {
      cluster.node(nodes.get(n), Map.of(), Map.of(), ClusterHarness.cards(String.format("GPU-%08d-0000-0000-0000-0000000000", n), 8, 40960));
    }
    cluster.start();

    Random random = new Random(42);
    List<Pod> burst = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Map<String, String> limits = new HashMap<>();
      limits.put("nvidia.com/gpu", Integer.toString(1 + random.nextInt(2)));
      limits.put("nvidia.com/gpumem", Integer.toString(1000 + random.nextInt(8000)));
      limits.put("nvidia.com/gpucores", Integer.toString(random.nextInt(30)));
      burst.add(cluster.create(ExtenderTest.gpuPod("burst", "p" + i, limits, Map.of())));
    }

    int restartAt = 117;
    for (int i = 0; i < restartAt; i++) {
      // Every third pod is filtered but not yet bound when the restart comes: its reservation must survive too.
      if (i % 3 == 0) {
        cluster.filter(burst.get(i), nodes);
      } else {
        cluster.schedule(burst.get(i), nodes);
      }
    }
    List<PodGrant> before = cluster.server.engine().grants();
    Map<String, NodeUsage> usageBefore = byNode(cluster.server.engine().usage());
    assertThat(before).hasSizeGreaterThan(100);

    cluster.stop();
    cluster.start();

    assertThat(cluster.server.engine().grants()).isEqualTo(before);
    // Registration order follows the informer's; the usage of every node must be identical.
    assertThat(byNode(cluster.server.engine().usage())).isEqualTo(usageBefore);

    for (int i = restartAt; i < burst.size(); i++) {
      cluster.schedule(burst.get(i), nodes);
    }
    // The ledger holds exactly what the pods' annotations say, one grant per annotated pod.
    List<PodGrant> after = cluster.server.engine().grants();
    Map<PodRef, String> annotated = new HashMap<>();
    for (Pod p : client.pods().inNamespace("burst").list().getItems()) {
      String allocated = p.getMetadata().getAnnotations() == null ? null : p.getMetadata().getAnnotations().get(HamiAnnotations.DEVICES_ALLOCATED);
      if (allocated != null) {
        annotated.put(new PodRef("burst", p.getMetadata().getName()), allocated);
      }
    }
    assertThat(after).hasSize(annotated.size());
    for (PodGrant g : after) {
      assertThat(DeviceListCodec.encode(g)).isEqualTo(annotated.get(g.pod()));
    }
    for (NodeUsage node : cluster.server.engine().usage()) {
      for (DeviceUsage d : node.devices()) {
        assertThat(d.usedMemoryMiB()).isLessThanOrEqualTo(d.device().memoryMiB());
        assertThat(d.usedCores()).isLessThanOrEqualTo(d.device().cores());
        assertThat(d.sharers()).isLessThanOrEqualTo(d.device().splitCount());
      }
    }
  }
}
