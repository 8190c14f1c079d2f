package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.core.queue.QueueAllocation;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * KAI's pod dialect scheduled by vgpu ({@code --kai-dialect}) over the mock API server: the webhook turns
 * KAI's pods into vgpu's, the extender charges each to its Queue, keeps pods waiting with a pod-level
 * reason (written on the pod, tried again when the Queue appears), holds gangs until they fit whole, and
 * bind writes KAI's GPU group label. Queues that KAI cannot mean are reported on the Queue.
 */
@EnableKubernetesMockClient(crud = true)
class KaiDialectSchedulingTest {
  private static final List<String> NODES = List.of("n0", "n1");
  KubernetesClient client;
  ClusterHarness cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = new ClusterHarness(client);
    for (int n = 0; n < NODES.size(); n++) {
      cluster.node(NODES.get(n), Map.of(), Map.of(), ClusterHarness.cards(String.format("GPU-%08d-0000-0000-0000-0000000000", n), 2, 40960));
    }
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private void startScheduler(Duration gangHold) throws Exception {
    cluster.start(SchedulerOptions.defaults().withKaiDialect("kai-scheduler", gangHold), DeviceConfig.DEFAULT);
  }

  private void queue(String json) {
    GenericKubernetesResource queue = PodJson.mapper().readValue(json.replace('\'', '"'), GenericKubernetesResource.class);
    queue.setApiVersion(KaiKeys.QUEUE_API_VERSION);
    queue.setKind("Queue");
    client.genericKubernetesResources(KaiObjects.QUEUES).resource(queue).create();
  }

  private void podGroup(String name, int minMember) {
    GenericKubernetesResource group = new GenericKubernetesResource();
    group.setApiVersion(KaiKeys.POD_GROUP_API_VERSION);
    group.setKind("PodGroup");
    group.setMetadata(new io.fabric8.kubernetes.api.model.ObjectMetaBuilder().withName(name).withNamespace("default").build());
    group.setAdditionalProperty("spec", Map.of("minMember", minMember));
    client.genericKubernetesResources(KaiObjects.POD_GROUPS).inNamespace("default").resource(group).create();
  }

  /** A pod of KAI's dialect, through the webhook, created. */
  private Pod kaiPod(String name, String queue, Map<String, String> annotations, String limits) throws Exception {
    String labels = queue == null ? "{}" : "{'kai.scheduler/queue':'" + queue + "'}";
    StringBuilder a = new StringBuilder("{");
    annotations.forEach((k, v) -> a.append(a.length() > 1 ? "," : "").append("'").append(k).append("':'").append(v).append("'"));
    a.append("}");
    String resources = limits.isEmpty() ? "" : ",'resources':{'limits':{" + limits + "}}";
    Pod pod = PodJson.fromTree(PodJson.mapper().readTree(("{'metadata':{'name':'" + name + "','namespace':'default','labels':" + labels + ",'annotations':" + a + "},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'app','image':'cuda'" + resources + "}]}}").replace('\'', '"')));
    ClusterHarness.Admission admitted = cluster.admit(pod, "admission.k8s.io/v1");
    assertThat(admitted.message()).isEmpty();
    return cluster.create(admitted.pod().orElseThrow());
  }

  private Pod get(String name) {
    return client.pods().inNamespace("default").withName(name).get();
  }

  private Optional<QueueAllocation> allocation(String queue) {
    return cluster.server.engine().queueAllocations().stream().filter(a -> a.queue().equals(queue)).findFirst();
  }

  @Test
  void kaisPodsRunChargedToTheirQueueAndFractionsGetTheirCardAsGroupLabel() throws Exception {
    queue("{'metadata':{'name':'research'},'spec':{'resources':{'gpu':{'quota':2,'limit':-1,'overQuotaWeight':1}}}}");
    queue("{'metadata':{'name':'default-queue'},'spec':{'resources':{'gpu':{'quota':-1,'limit':-1,'overQuotaWeight':1}}}}");
    startScheduler(Duration.ofSeconds(60));
    Pod whole = kaiPod("whole", "research", Map.of(), "'nvidia.com/gpu':'1'");
    Pod memory = kaiPod("memory", null, Map.of("gpu-memory", "20480"), "");
    Pod half = kaiPod("half", "research", Map.of("gpu-fraction", "0.5"), "");
    assertThat(cluster.schedule(whole, NODES)).isPresent();
    assertThat(cluster.schedule(memory, NODES)).isPresent();
    assertThat(cluster.schedule(half, NODES)).isPresent();
    // KAI's 0.51 of a 40960 MiB card: int(40960 x 0.51) = 20889 MiB.
    assertThat(PodRefs.annotations(get("memory")).get(HamiAnnotations.DEVICES_ALLOCATED)).contains(",NVIDIA,20889,0");
    String card = PodRefs.annotations(get("memory")).get(HamiAnnotations.DEVICES_ALLOCATED).split(",")[0];
    assertThat(get("memory").getMetadata().getLabels()).containsEntry(KaiKeys.GPU_GROUP, card).containsEntry(KaiKeys.QUEUE_LABEL, "default-queue");
    assertThat(get("whole").getMetadata().getLabels()).doesNotContainKey(KaiKeys.GPU_GROUP);
    assertThat(allocation("research").orElseThrow().gpuHundredths()).isEqualTo(150);
    assertThat(allocation("default-queue").orElseThrow().gpuHundredths()).isEqualTo(51);

    // A restarted scheduler charges the running pods to their queues again.
    cluster.stop();
    startScheduler(Duration.ofSeconds(60));
    assertThat(allocation("research").orElseThrow().gpuHundredths()).isEqualTo(150);
    assertThat(allocation("default-queue").orElseThrow().gpuHundredths()).isEqualTo(51);
  }

  @Test
  void aPodWaitsForItsQueueWithTheReasonOnThePodAndIsTriedAgainWhenTheQueueAppears() throws Exception {
    startScheduler(Duration.ofSeconds(60));
    Pod lost = kaiPod("lost", "later", Map.of("gpu-fraction", "0.5"), "");
    // Its reason is written on the pod while it is filtered: not on the listener's I/O thread.
    assertThat(cluster.server.extender().filterAtOnce(new ExtenderApi.ExtenderArgs(lost, null, NODES))).isNull();
    JsonNode answer = cluster.filter(lost, NODES);
    assertThat(answer.path("NodeNames").isNull() || answer.path("NodeNames").isEmpty()).isTrue();
    assertThat(answer.path("FailedNodes").path("n0").asString()).isEqualTo("QueueMissing: queue later does not exist");
    assertThat(answer.path("FailedNodes").path("n1").asString()).isEqualTo("QueueMissing: queue later does not exist");
    assertThat(PodRefs.annotations(get("lost"))).containsEntry(KaiKeys.WAITING_ANNOTATION, "QueueMissing: queue later does not exist");
    ClusterHarness.await(() -> client.v1().events().inNamespace("default").list().getItems().stream()
        .anyMatch(e -> "QueueMissing".equals(e.getReason()) && "lost".equals(e.getInvolvedObject().getName())), "the QueueMissing Event");

    queue("{'metadata':{'name':'later'},'spec':{'resources':{'gpu':{'quota':0,'limit':-1,'overQuotaWeight':1}}}}");
    // kube-scheduler does not watch Queues: the scheduler changes the waiting pod, which it does watch.
    // (the mock API server keeps a key a merge patch sets to null, with the value null)
    ClusterHarness.await(() -> PodRefs.annotations(get("lost")).get(KaiKeys.WAITING_ANNOTATION) == null, "the waiting pod to be woken");
    assertThat(cluster.schedule(get("lost"), NODES)).isPresent();
  }

  @Test
  void aPodThatWouldPassItsQueuesLimitWaitsUntilAGrantIsGivenBack() throws Exception {
    queue("{'metadata':{'name':'small'},'spec':{'resources':{'gpu':{'quota':1,'limit':1,'overQuotaWeight':1}}}}");
    startScheduler(Duration.ofSeconds(60));
    Pod first = kaiPod("first", "small", Map.of(), "'nvidia.com/gpu':'1'");
    Pod second = kaiPod("second", "small", Map.of("gpu-fraction", "0.2"), "");
    assertThat(cluster.schedule(first, NODES)).isPresent();
    JsonNode answer = cluster.filter(second, NODES);
    assertThat(answer.path("FailedNodes").path("n0").asString()).isEqualTo("QueueLimit: queue small: gpu 1 held + 0.20 asked > limit 1");
    cluster.delete(new PodRef("default", "first"));
    assertThat(cluster.schedule(get("second"), NODES)).isPresent();
    assertThat(PodRefs.annotations(get("second")).get(KaiKeys.WAITING_ANNOTATION)).isNull();
  }

  @Test
  void aQueueDeletedWithRunningPodsKeepsTheirGrantsCountedAndNewPodsWait() throws Exception {
    queue("{'metadata':{'name':'brief'},'spec':{'resources':{'gpu':{'quota':1,'limit':-1,'overQuotaWeight':1}}}}");
    startScheduler(Duration.ofSeconds(60));
    assertThat(cluster.schedule(kaiPod("running", "brief", Map.of(), "'nvidia.com/gpu':'1'"), NODES)).isPresent();
    client.genericKubernetesResources(KaiObjects.QUEUES).withName("brief").delete();
    ClusterHarness.await(() -> cluster.server.engine().queues().isEmpty(), "the scheduler to see the Queue deleted");
    assertThat(allocation("brief").orElseThrow().gpuHundredths()).isEqualTo(100);
    assertThat(allocation("brief").orElseThrow().spec()).isEmpty();
    Pod next = kaiPod("next", "brief", Map.of(), "'nvidia.com/gpu':'1'");
    assertThat(cluster.filter(next, NODES).path("FailedNodes").path("n0").asString()).isEqualTo("QueueMissing: queue brief does not exist");
    cluster.delete(new PodRef("default", "running"));
    assertThat(allocation("brief")).isEmpty();
  }

  @Test
  void aGangWaitsForItsMembersThenIsReservedWholeAndEachMemberGetsItsNode() throws Exception {
    queue("{'metadata':{'name':'train'},'spec':{'resources':{'gpu':{'quota':-1,'limit':-1,'overQuotaWeight':1}}}}");
    podGroup("pg", 3);
    startScheduler(Duration.ofSeconds(60));
    Pod w0 = kaiPod("w0", "train", Map.of("pod-group-name", "pg"), "'nvidia.com/gpu':'1'");
    Pod w1 = kaiPod("w1", "train", Map.of("pod-group-name", "pg"), "'nvidia.com/gpu':'1'");
    ClusterHarness.await(() -> cluster.server.ledger().pod(new PodRef("default", "w1")).isPresent(), "the ledger to see w1");
    JsonNode waiting = cluster.filter(w0, NODES);
    assertThat(waiting.path("FailedNodes").path("n1").asString()).isEqualTo("GangIncomplete: gang default/pg has 2 of its 3 members");
    assertThat(cluster.server.engine().grants()).isEmpty();

    Pod w2 = kaiPod("w2", "train", Map.of("pod-group-name", "pg"), "'nvidia.com/gpu':'1'");
    ClusterHarness.await(() -> cluster.server.ledger().pod(new PodRef("default", "w2")).isPresent(), "the ledger to see w2");
    JsonNode placed = cluster.filter(w2, NODES);
    assertThat(placed.path("NodeNames")).hasSize(1);
    // All three hold cards now, each one's decision written on it, and none waits any longer.
    assertThat(cluster.server.engine().grants()).hasSize(3);
    for (String member : List.of("w0", "w1")) {
      Map<String, String> annotations = PodRefs.annotations(get(member));
      assertThat(annotations).containsKey(HamiAnnotations.ASSIGNED_NODE);
      assertThat(annotations.get(KaiKeys.WAITING_ANNOTATION)).isNull();
      assertThat(cluster.schedule(get(member), NODES)).contains(annotations.get(HamiAnnotations.ASSIGNED_NODE));
    }
    assertThat(cluster.bind(new PodRef("default", "w2"), placed.path("NodeNames").get(0).asString()).path("Error").asString("")).isEmpty();
  }

  @Test
  void aPodNamingAPodGroupThatDoesNotExistWaitsForItAsUnderKai() throws Exception {
    queue("{'metadata':{'name':'train'},'spec':{'resources':{'gpu':{'quota':-1,'limit':-1,'overQuotaWeight':1}}}}");
    startScheduler(Duration.ofSeconds(60));
    Pod early = kaiPod("early", "train", Map.of("pod-group-name", "late"), "'nvidia.com/gpu':'1'");
    assertThat(cluster.filter(early, NODES).path("FailedNodes").path("n0").asString()).isEqualTo("GangIncomplete: PodGroup default/late does not exist");
    podGroup("late", 1);
    ClusterHarness.await(() -> PodRefs.annotations(get("early")).get(KaiKeys.WAITING_ANNOTATION) == null, "the waiting pod to be woken");
    assertThat(cluster.schedule(get("early"), NODES)).isPresent();
  }

  @Test
  void aGangWhoseMembersAreNotBoundInTimeGivesItsCardsBack() throws Exception {
    queue("{'metadata':{'name':'train'},'spec':{'resources':{'gpu':{'quota':-1,'limit':-1,'overQuotaWeight':1}}}}");
    podGroup("pg", 2);
    startScheduler(Duration.ofSeconds(1));
    kaiPod("a", "train", Map.of("pod-group-name", "pg"), "'nvidia.com/gpu':'1'");
    Pod b = kaiPod("b", "train", Map.of("pod-group-name", "pg"), "'nvidia.com/gpu':'1'");
    ClusterHarness.await(() -> cluster.server.ledger().pods().size() == 2, "the ledger to see both members");
    assertThat(cluster.filter(b, NODES).path("NodeNames")).hasSize(1);
    assertThat(cluster.server.engine().grants()).hasSize(2);
    ClusterHarness.await(() -> cluster.server.engine().grants().isEmpty(), "the gang's hold to run out");
  }

  @Test
  void aQueueKaiCannotMeanIsReportedOnTheQueueOnceAndStillApplied() throws Exception {
    queue("{'metadata':{'name':'odd'},'spec':{'resources':{'gpu':{'quota':1,'limit':'lots','overQuotaWeight':-2}}}}");
    queue("{'metadata':{'name':'orphan'},'spec':{'parentQueue':'nowhere'}}");
    queue("{'metadata':{'name':'a'},'spec':{'parentQueue':'b'}}");
    queue("{'metadata':{'name':'b'},'spec':{'parentQueue':'a'}}");
    startScheduler(Duration.ofSeconds(60));
    ClusterHarness.await(() -> queueEvents().size() >= 5, "the Events on the Queues");
    assertThat(queueEvents()).extracting(e -> e.getInvolvedObject().getName() + ": " + e.getMessage()).containsExactlyInAnyOrder(
        "odd: Queue odd: spec.resources.gpu.limit \"lots\" is not a number: taken as 0 (it admits nothing)",
        "odd: Queue odd: spec.resources.gpu.overQuotaWeight -2 must not be negative: taken as 0 (it takes no part in the over-quota division)",
        "orphan: Queue orphan: spec.parentQueue chain reaches queue nowhere, which does not exist: its pods wait (QueueMissing)",
        "a: Queue a: spec.parentQueue chain runs in a cycle through queue a: its pods wait (QueueMissing)",
        "b: Queue b: spec.parentQueue chain runs in a cycle through queue b: its pods wait (QueueMissing)");
    assertThat(queueEvents()).allSatisfy(e -> {
      assertThat(e.getReason()).isEqualTo(KaiObjects.QUEUE_INVALID);
      assertThat(e.getType()).isEqualTo("Warning");
      assertThat(e.getInvolvedObject().getKind()).isEqualTo("Queue");
    });
    assertThat(cluster.server.engine().queues()).extracting(q -> q.name()).containsExactlyInAnyOrder("odd", "orphan", "a", "b");
    Pod stuck = kaiPod("stuck", "odd", Map.of("gpu-fraction", "0.5"), "");
    assertThat(cluster.filter(stuck, NODES).path("FailedNodes").path("n0").asString()).isEqualTo("QueueLimit: queue odd: gpu 0 held + 0.50 asked > limit 0");
  }

  private List<Event> queueEvents() {
    return client.v1().events().inNamespace("default").list().getItems().stream().filter(e -> KaiObjects.QUEUE_INVALID.equals(e.getReason())).toList();
  }
}
