package io.vgpu.examples.lab.kubescheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.apiserver.ApiServerStandIn;
import io.vgpu.k8s.pod.PodJson;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The cluster's default scheduler beside vgpu's kube-scheduler, over the lab's API server: the pods that
 * name {@code default-scheduler} or no scheduler are bound to the first node in the scenario's order their
 * node selection allows; a pod naming another scheduler and one asking for a vGPU resource stay Pending.
 * No pod here interests vgpu's extender, so none is sent to it.
 */
class KubeSchedulerStandInTest {
  private final ApiServerStandIn api = ApiServerStandIn.start();
  private final KubernetesClient client = api.client();
  private KubeSchedulerStandIn vgpuKubeScheduler;
  private KubeSchedulerStandIn defaultScheduler;

  @AfterEach
  void stop() {
    if (defaultScheduler != null) {
      defaultScheduler.close();
    }
    if (vgpuKubeScheduler != null) {
      vgpuKubeScheduler.close();
    }
    client.close();
    api.close();
  }

  private void start() throws Exception {
    for (String[] node : new String[][] {{"cpu-node", "cpu"}, {"gpu-node", "gpu"}}) {
      client.nodes().resource(new NodeBuilder().withNewMetadata().withName(node[0]).addToLabels("pool", node[1]).endMetadata().build()).create();
    }
    KubeSchedulerConfig config = KubeSchedulerConfig.of(PodJson.mapper().readTree("""
        {"profiles": [{"schedulerName": "hami-scheduler"}],
         "leaderElection": {"resourceName": "hami-scheduler", "resourceNamespace": "kube-system"},
         "extenders": [{"urlPrefix": "https://127.0.0.1:1/extender", "filterVerb": "filter", "bindVerb": "bind", "nodeCacheCapable": true,
                        "managedResources": [{"name": "nvidia.com/gpu"}, {"name": "nvidia.com/gpumem"}]}]}
        """));
    vgpuKubeScheduler = new KubeSchedulerStandIn(client, config, URI.create("https://127.0.0.1:1/extender"), SSLContext.getDefault(), () -> List.of("cpu-node", "gpu-node"),
        "vgpu-scheduler-0");
    defaultScheduler = KubeSchedulerStandIn.defaultScheduler(client, vgpuKubeScheduler);
  }

  private Pod create(String name, String schedulerName, Map<String, String> nodeSelector, Map<String, String> limits) throws InterruptedException {
    Map<String, Quantity> quantities = new java.util.LinkedHashMap<>();
    limits.forEach((k, v) -> quantities.put(k, new Quantity(v)));
    Pod pod = new PodBuilder().withNewMetadata().withName(name).withNamespace("apps").endMetadata().withNewSpec()
        .withSchedulerName(schedulerName).withNodeSelector(nodeSelector)
        .addNewContainer().withName("app").withImage("app").withNewResources().withLimits(quantities).endResources().endContainer().endSpec()
        .build();
    Pod created = client.pods().inNamespace("apps").resource(pod).create();
    await(() -> defaultScheduler.seen(created.getMetadata().getUid()) && vgpuKubeScheduler.seen(created.getMetadata().getUid()));
    return created;
  }

  private String nodeOf(String name) {
    return client.pods().inNamespace("apps").withName(name).get().getSpec().getNodeName();
  }

  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("timed out").isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  private void settle() throws InterruptedException {
    await(() -> defaultScheduler.idle() && vgpuKubeScheduler.idle());
  }

  @Test
  void podsWithoutVgpuResourcesThatNameTheDefaultSchedulerOrNoneRunOnTheFirstNodeTheirSelectionAllows() throws Exception {
    start();
    create("plain", null, Map.of(), Map.of());
    settle();
    create("selected", "default-scheduler", Map.of("pool", "gpu"), Map.of());
    settle();

    assertThat(nodeOf("plain")).isEqualTo("cpu-node");
    assertThat(nodeOf("selected")).isEqualTo("gpu-node");
    assertThat(vgpuKubeScheduler.placed()).containsExactly(new PodRef("apps", "plain"), new PodRef("apps", "selected"));
    List<Event> events = client.v1().events().inNamespace("apps").list().getItems();
    assertThat(events).anySatisfy(e -> {
      assertThat(e.getReason()).isEqualTo("Scheduled");
      assertThat(e.getMessage()).isEqualTo("Successfully assigned apps/plain to cpu-node");
      assertThat(e.getReportingComponent()).isEqualTo("default-scheduler");
    });
  }

  @Test
  void aPodNoNodeAllowsWaitsWithTheReasonPerNode() throws Exception {
    start();
    create("nowhere", "default-scheduler", Map.of("pool", "storage"), Map.of());
    settle();

    assertThat(nodeOf("nowhere")).isNull();
    assertThat(defaultScheduler.reasons(new PodRef("apps", "nowhere"))).containsExactly(
        Map.entry("cpu-node", "NodeSelectorMismatch"), Map.entry("gpu-node", "NodeSelectorMismatch"));
  }

  @Test
  void aPodNamingAnotherSchedulerAndAVgpuPodThatKeptTheDefaultSchedulerStayPending() throws Exception {
    start();
    create("elsewhere", "team-scheduler", Map.of(), Map.of());
    create("bypassed", "default-scheduler", Map.of(), Map.of("nvidia.com/gpumem", "1024"));
    settle();
    Thread.sleep(300); // nothing that could still bind them

    assertThat(nodeOf("elsewhere")).isNull();
    assertThat(nodeOf("bypassed")).isNull();
    assertThat(vgpuKubeScheduler.placed()).isEmpty();
    assertThat(defaultScheduler.reasons(new PodRef("apps", "bypassed")).get(""))
        .startsWith("asks for nvidia.com/gpumem, which only vgpu's scheduler places; default-scheduler leaves it Pending");
  }
}
