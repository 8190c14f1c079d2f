package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.BasicBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * kube-scheduler binds a pod moments after the filter answered, usually before the scheduler's informer
 * has seen the decision the filter wrote behind its answer. The bind then reads the pod as that write
 * left it, not from the API server: one read per pod fewer, for the scheduler and the API server.
 */
@EnableKubernetesMockClient(crud = true)
class BindFromWrittenDecisionTest {
  static final String CARDS = "GPU-88888888-0000-0000-0000-0000000000";

  KubernetesClient client;
  KubernetesClient schedulerClient;
  ClusterHarness cluster;
  /** The scheduler's reads of single pods: "GET <path>". */
  final Queue<String> podReads = new ConcurrentLinkedQueue<>();

  @BeforeEach
  void start() throws Exception {
    Interceptor reads =
        new Interceptor() {
          @Override
          public void before(BasicBuilder builder, HttpRequest request, RequestTags tags) {
            String path = request.uri().getPath();
            if ("GET".equals(request.method()) && path.matches("/api/v1/namespaces/[^/]+/pods/[^/]+")) {
              podReads.add("GET " + path);
            }
          }
        };
    schedulerClient =
        new KubernetesClientBuilder().withConfig(client.getConfiguration()).withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor("pod-reads", reads)).build();
    cluster = new ClusterHarness(client);
    cluster.node("n1", Map.of(), Map.of(), ClusterHarness.cards(CARDS, 2, 40960));
    cluster.start(SchedulerOptions.defaults(), DeviceConfig.DEFAULT, schedulerClient);
  }

  @AfterEach
  void stop() {
    cluster.close();
    schedulerClient.close();
  }

  private Pod created(PodRef ref) {
    Pod pod = ExtenderTest.gpuPod(ref.namespace(), ref.name(), Map.of("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4096"), Map.of());
    Pod created = cluster.create(pod);
    ClusterHarness.await(() -> cluster.server.ledger().pod(ref).isPresent(), "the scheduler's informer to see " + ref);
    return created;
  }

  /** The bind kube-scheduler sends once the filter answered, at once: it does not wait for the write. */
  private String bindAtOnce(PodRef ref, String uid, String node) throws Exception {
    var args = ClusterHarness.JSON.createObjectNode();
    args.put("PodName", ref.name());
    args.put("PodNamespace", ref.namespace());
    args.put("PodUID", uid);
    args.put("Node", node);
    return cluster.post("/bind", args.toString()).body();
  }

  @Test
  void aBindRightAfterTheFilterBindsFromTheWrittenDecisionWithoutReadingThePod() throws Exception {
    for (int i = 0; i < 20; i++) {
      PodRef ref = new PodRef("team-a", "p" + i);
      Pod pod = created(ref);
      String uid = pod.getMetadata().getUid();
      assertThat(cluster.filterAsSent(pod, List.of("n1")).path("NodeNames").toString()).isEqualTo("[\"n1\"]");
      assertThat(bindAtOnce(ref, uid, "n1")).as(ref.name()).isEqualTo("{\"Error\":\"\"}");
      assertThat(client.pods().inNamespace(ref.namespace()).withName(ref.name()).get().getMetadata().getAnnotations()).containsEntry(HamiAnnotations.ASSIGNED_NODE, "n1");
      cluster.completeAllocation(ref, "n1");
      cluster.delete(ref);
    }
    // Whether or not the informer had seen the decision, the bind knew what the filter wrote.
    assertThat(podReads).as("pods the scheduler read from the API server").isEmpty();
  }

  @Test
  void aBindOfAPodWhoseDecisionWasNotWrittenByThisFilterReadsIt() throws Exception {
    PodRef ref = new PodRef("team-a", "p1");
    Pod pod = created(ref);
    // kube-scheduler binds a pod this scheduler never filtered: nothing written to go by.
    String answer = bindAtOnce(ref, pod.getMetadata().getUid(), "n1");
    assertThat(answer).contains("holds no decision");
    ClusterHarness.await(() -> podReads.contains("GET /api/v1/namespaces/team-a/pods/p1"), "the scheduler to read the pod");
  }
}
