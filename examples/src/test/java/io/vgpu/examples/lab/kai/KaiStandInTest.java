package io.vgpu.examples.lab.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.apiserver.ApiServerStandIn;
import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The stand-in against the lab's API server over HTTP, the reservation container played by the test. */
class KaiStandInTest {
  private final ApiServerStandIn api = ApiServerStandIn.start();
  private final KubernetesClient admin = api.client();
  private final AtomicInteger groups = new AtomicInteger();
  private KaiStandIn kai;

  @AfterEach
  void close() {
    if (kai != null) {
      kai.close();
    }
    admin.close();
    api.close();
  }

  private void cluster(String memoryLabel, Duration reservationTimeout) {
    for (String ns : List.of("default", KaiKeys.RESERVATION_NAMESPACE)) {
      admin.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName(ns).endMetadata().build()).create();
    }
    var labels = new java.util.LinkedHashMap<String, String>();
    if (memoryLabel != null) {
      labels.put(KaiKeys.NODE_GPU_MEMORY_LABEL, memoryLabel);
    }
    admin.nodes().resource(new NodeBuilder().withNewMetadata().withName("worker1").withLabels(labels).endMetadata().withNewStatus()
        .addToAllocatable("nvidia.com/gpu", new Quantity("8")).addToAllocatable("cpu", new Quantity("16")).addToAllocatable("memory", new Quantity("64Gi"))
        .endStatus().build()).create();
    KaiResources.of(admin, KaiResources.QUEUE).resource(KaiResources.generic(PodJson.mapper().readTree(
        "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"default\"},\"spec\":{\"resources\":{"
            + "\"gpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},\"cpu\":{\"quota\":-1,\"limit\":-1},\"memory\":{\"quota\":-1,\"limit\":-1}}}}"))).create();
    KaiResources.of(admin, KaiResources.QUEUE).resource(KaiResources.generic(PodJson.mapper().readTree(
        "{\"apiVersion\":\"scheduling.run.ai/v2\",\"kind\":\"Queue\",\"metadata\":{\"name\":\"default-queue\"},\"spec\":{\"parentQueue\":\"default\",\"resources\":{"
            + "\"gpu\":{\"quota\":-1,\"limit\":-1,\"overQuotaWeight\":1},\"cpu\":{\"quota\":-1,\"limit\":-1},\"memory\":{\"quota\":-1,\"limit\":-1}}}}"))).create();
    api.admission(new KaiAdmission(() -> "abcdefg"));
    kai = new KaiStandIn(api::client, () -> List.of("worker1"), "vgpu-lab/probe", List.of("reserve"), "nvidia", reservationTimeout,
        () -> "group-" + groups.incrementAndGet());
  }

  private Pod create(String yaml) {
    Pod pod = PodJson.mapper().readValue(yaml, Pod.class);
    return api.client(UserInfo.TENANT).pods().inNamespace("default").resource(pod).create();
  }

  private static final String WHOLE = "{\"metadata\":{\"name\":\"kai-whole-gpu\",\"labels\":{\"kai.scheduler/queue\":\"default-queue\"}},"
      + "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"containers\":[{\"name\":\"app\",\"image\":\"busybox\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}";
  private static final String SHARED = "{\"metadata\":{\"name\":\"gpu-sharing\",\"labels\":{\"kai.scheduler/queue\":\"default-queue\"},"
      + "\"annotations\":{\"gpu-memory\":\"20480\"}},\"spec\":{\"schedulerName\":\"kai-scheduler\",\"containers\":[{\"name\":\"gpu-workload\",\"image\":\"busybox\"}]}}";

  @Test
  void seed001sPodsGoThroughGrouperSchedulerAndBinderToTheirBinding() {
    cluster("40960", KaiStandIn.RESERVATION_TIMEOUT);
    create(WHOLE);
    await(() -> nodeOf("kai-whole-gpu").equals("worker1"));
    Pod shared = create(SHARED);
    assertThat(shared.getSpec().getRuntimeClassName()).isEqualTo("nvidia");

    JsonNode bind = await(() -> bindRequest("gpu-sharing"));
    assertThat(bind.path("metadata").path("ownerReferences").get(0).path("uid").asString()).isEqualTo(shared.getMetadata().getUid());
    assertThat(bind.path("metadata").path("labels").path("selected-node").asString()).isEqualTo("worker1");
    assertThat(bind.path("spec").toString()).isEqualTo(
        "{\"podName\":\"gpu-sharing\",\"selectedNode\":\"worker1\",\"receivedResourceType\":\"Fraction\",\"selectedGPUGroups\":[\"group-1\"],"
            + "\"receivedGPU\":{\"count\":1,\"portion\":\"0.51\"}}");
    // the reservation pod of the group, already on its node; the test plays its container
    String reservation = ReservationPods.name("worker1", "group-1");
    Pod r = await(() -> Optional.ofNullable(admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(reservation).get()));
    assertThat(r.getSpec().getNodeName()).isEqualTo("worker1");
    assertThat(r.getMetadata().getLabels()).containsEntry(KaiKeys.GPU_GROUP, "group-1");
    assertThat(nodeOf("gpu-sharing")).isEmpty();
    await(() -> kai.pendingWork().stream().anyMatch(w -> w.contains(reservation)));
    api.client(UserInfo.serviceAccount(KaiKeys.RESERVATION_NAMESPACE, ReservationPods.SERVICE_ACCOUNT)).pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE)
        .withName(reservation).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"run.ai/reserve_for_gpu_index\":\"GPU-card-3\"}}}");

    await(() -> nodeOf("gpu-sharing").equals("worker1"));
    Pod bound = admin.pods().inNamespace("default").withName("gpu-sharing").get();
    assertThat(bound.getMetadata().getLabels()).containsEntry(KaiKeys.GPU_GROUP, "group-1");
    assertThat(bound.getMetadata().getAnnotations()).containsEntry(KaiKeys.RECEIVED_RESOURCE_TYPE, "Fraction")
        .containsEntry(KaiKeys.SHARED_GPU_CONFIGMAP, "gpu-sharing-abcdefg-shared-gpu").containsKey(KaiKeys.POD_GROUP_NAME);
    ConfigMap capabilities = admin.configMaps().inNamespace("default").withName("gpu-sharing-abcdefg-shared-gpu-0").get();
    assertThat(capabilities.getData()).isEqualTo(Map.of("NVIDIA_VISIBLE_DEVICES", "GPU-card-3", "GPU_PORTION", "0.51", "RUNAI_NUM_OF_GPUS", "0.51",
        "CUDA_DEVICE_MEMORY_LIMIT", "20889m"));
    assertThat(capabilities.getMetadata().getOwnerReferences().get(0).getUid()).isEqualTo(shared.getMetadata().getUid());
    assertThat(admin.configMaps().inNamespace("default").withName("gpu-sharing-abcdefg-shared-gpu-0-evar").get()).isNotNull();

    await(() -> kai.pendingWork().isEmpty());
    JsonNode queues = KaiQueues.report(KaiStandIn.list(admin, KaiResources.QUEUE), admin.nodes().list().getItems(),
        admin.pods().inAnyNamespace().list().getItems(), KaiStandIn.list(admin, KaiResources.BIND_REQUEST));
    assertThat(queues.size()).isEqualTo(2);
    for (JsonNode q : queues) {
      // seed 001: "GPU: requested: <1.51>, allocated: <1.51>, fairShare: <1.51>" on default-queue and its parent
      assertThat(q.path("gpu").toString()).contains("\"requested\":1.51,\"allocated\":1.51,\"fairShare\":1.51,\"maxAllowed\":null");
    }
    assertThat(queues.get(1).path("parent").asString()).isEqualTo("default");
  }

  @Test
  void aSecondFractionPacksIntoTheFullestGroupAndAQueueThatDoesNotExistLeavesThePodPending() {
    cluster("40960", KaiStandIn.RESERVATION_TIMEOUT);
    create(SHARED.replace("20480", "10000"));
    String reservation = ReservationPods.name("worker1", "group-1");
    await(() -> Optional.ofNullable(admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(reservation).get()));
    admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(reservation)
        .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"run.ai/reserve_for_gpu_index\":\"GPU-card-0\"}}}");
    await(() -> nodeOf("gpu-sharing").equals("worker1"));
    create(SHARED.replace("gpu-sharing", "second").replace("20480", "20000"));
    await(() -> nodeOf("second").equals("worker1"));
    assertThat(bindRequest("second").orElseThrow().path("spec").path("selectedGPUGroups").toString()).isEqualTo("[\"group-1\"]");
    assertThat(admin.pods().inNamespace("default").withName("second").get().getMetadata().getLabels()).containsEntry(KaiKeys.GPU_GROUP, "group-1");

    create(WHOLE.replace("default-queue", "research").replace("kai-whole-gpu", "lost"));
    await(() -> kai.waiting().containsKey(new PodRef("default", "lost")));
    assertThat(kai.waiting().get(new PodRef("default", "lost"))).isEqualTo(new KaiStandIn.Waiting("QueueMissing", "queue research does not exist"));
    assertThat(nodeOf("lost")).isEmpty();
  }

  @Test
  void aReservationPodThatNeverReportsFailsTheBindAndIsDeleted() {
    cluster("40960", Duration.ofMillis(300));
    create(SHARED);
    String first = ReservationPods.name("worker1", "group-1");
    await(() -> Optional.ofNullable(admin.v1().events().inNamespace("default").list().getItems().stream()
        .filter(e -> e.getReason().equals("BindingError")).findFirst().orElse(null)));
    String message = admin.v1().events().inNamespace("default").list().getItems().stream().filter(e -> e.getReason().equals("BindingError")).findFirst()
        .orElseThrow().getMessage();
    assertThat(message).isEqualTo("Failed to bind pod default/gpu-sharing to node worker1: failed to reserve GPUs: failed waiting for GPU reservation pod to allocate: "
        + "kai-resource-reservation/" + first);
    // KAI schedules it again, into a new group with a new reservation pod
    await(() -> Optional.ofNullable(admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(ReservationPods.name("worker1", "group-2")).get()));
    assertThat(nodeOf("gpu-sharing")).isEmpty();
  }

  @Test
  void withoutTheMemoryLabelAFractionIsBoundButHamicoreWritesNoLimit() {
    cluster(null, KaiStandIn.RESERVATION_TIMEOUT);
    create(SHARED.replace("\"gpu-memory\":\"20480\"", "\"gpu-fraction\":\"0.5\""));
    String reservation = ReservationPods.name("worker1", "group-1");
    await(() -> Optional.ofNullable(admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(reservation).get()));
    admin.pods().inNamespace(KaiKeys.RESERVATION_NAMESPACE).withName(reservation)
        .patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"run.ai/reserve_for_gpu_index\":\"GPU-card-0\"}}}");
    await(() -> nodeOf("gpu-sharing").equals("worker1"));
    assertThat(admin.configMaps().inNamespace("default").withName("gpu-sharing-abcdefg-shared-gpu-0").get().getData())
        .isEqualTo(Map.of("NVIDIA_VISIBLE_DEVICES", "GPU-card-0", "GPU_PORTION", "0.50", "RUNAI_NUM_OF_GPUS", "0.50"));
    // a memory pod cannot be scheduled there at all
    create(SHARED.replace("gpu-sharing", "by-memory"));
    await(() -> kai.waiting().containsKey(new PodRef("default", "by-memory")));
    assertThat(kai.waiting().get(new PodRef("default", "by-memory")).message()).isEqualTo("node(s) didn't have enough resources: GPU memory");
  }

  @Test
  void aGangWaitsForItsMinMemberThenIsScheduled() {
    cluster("40960", KaiStandIn.RESERVATION_TIMEOUT);
    KaiResources.of(admin, KaiResources.POD_GROUP).inNamespace("default").resource(KaiResources.generic(PodJson.mapper().readTree(
        "{\"apiVersion\":\"scheduling.run.ai/v2alpha2\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"pg-train\",\"namespace\":\"default\"},"
            + "\"spec\":{\"minMember\":2,\"queue\":\"default-queue\"}}"))).create();
    String member = "{\"metadata\":{\"name\":\"NAME\",\"annotations\":{\"pod-group-name\":\"pg-train\"}},"
        + "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}";
    create(member.replace("NAME", "w0"));
    await(() -> kai.waiting().containsKey(new PodRef("default", "w0")));
    assertThat(kai.waiting().get(new PodRef("default", "w0"))).isEqualTo(new KaiStandIn.Waiting("GangIncomplete", "podgroup default/pg-train has 1 of its minMember 2 pods"));
    create(member.replace("NAME", "w1"));
    await(() -> nodeOf("w0").equals("worker1") && nodeOf("w1").equals("worker1"));
    assertThat(bindRequest("w1").orElseThrow().path("spec").toString())
        .isEqualTo("{\"podName\":\"w1\",\"selectedNode\":\"worker1\",\"receivedResourceType\":\"Regular\",\"receivedGPU\":{\"count\":1,\"portion\":\"1.00\"}}");
  }

  @Test
  void aMalformedRequestIsDeniedAtCreateWithKaisMessage() {
    cluster("40960", KaiStandIn.RESERVATION_TIMEOUT);
    var e = org.assertj.core.api.Assertions.catchThrowableOfType(io.fabric8.kubernetes.client.KubernetesClientException.class,
        () -> create(SHARED.replace("\"20480\"", "\"8000Mi\"")));
    assertThat(e.getStatus().getMessage()).isEqualTo("admission webhook \"kai-admission\" denied the request: gpu-memory annotation value must be a positive integer greater than 0");
  }

  private Optional<JsonNode> bindRequest(String name) {
    return Optional.ofNullable(KaiResources.of(admin, KaiResources.BIND_REQUEST).inNamespace("default").withName(name).get()).map(KaiResources::json);
  }

  private String nodeOf(String name) {
    Pod p = admin.pods().inNamespace("default").withName(name).get();
    return p == null || p.getSpec().getNodeName() == null ? "" : p.getSpec().getNodeName();
  }

  private static void await(BooleanSupplier condition) {
    await(() -> condition.getAsBoolean() ? Optional.of(true) : Optional.empty());
  }

  private static <T> T await(java.util.function.Supplier<Optional<T>> value) {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (true) {
      Optional<T> v = value.get();
      if (v.isPresent()) {
        return v.get();
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out");
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }
}
