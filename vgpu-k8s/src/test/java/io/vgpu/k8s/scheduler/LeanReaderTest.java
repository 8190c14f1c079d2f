package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodList;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.kai.KaiKeys;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.core.JacksonException;

/**
 * The streaming readers give exactly what a full decode and {@link LeanStore}'s copy give, for pods
 * and nodes alike, in lists and in watch events; other kinds read as fabric8 reads them.
 */
class LeanReaderTest {
  private static final Set<String> RESOURCES = LeanStore.podResources(ResourceSchema.nvidia());
  /** fabric8's own decoding, the reference. */
  private static final KubernetesSerialization FULL = new KubernetesSerialization();

  private final Map<String, Integer> dropped = new HashMap<>();
  private final KubernetesSerialization lean =
      LeanDecoding.serialization(LeanReader.forCache(RESOURCES, (key, annotation, length) -> dropped.put(key + "|" + annotation, length)));

  static Pod full() {
    return new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("ns").withUid("u1").withResourceVersion("7").withCreationTimestamp("2026-12-02T10:00:00Z")
          .addToAnnotations("hami.io/vgpu-node", "n1").addToAnnotations("team.example.com/owner", "x".repeat(4096))
          .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, "GPU-a,NVIDIA,1000,10:;").addToAnnotations("hami.io/node-scheduler-policy", "x".repeat(20_000))
          .addToLabels("app", "trainer").addToLabels(KaiKeys.QUEUE_LABEL, "team-a").addToFinalizers("f").addNewOwnerReference().withName("rs").endOwnerReference()
          .addNewManagedField().withManager("kubectl").withOperation("Update").endManagedField().endMetadata()
        .withNewSpec().withNodeName("n1").withSchedulerName("vgpu-scheduler").addToNodeSelector("zone", "a")
          .addNewInitContainer().withName("init").withRestartPolicy("Always").withNewResources().addToRequests("cpu", new Quantity("500m")).endResources().endInitContainer()
          .addNewContainer().withName("main").withImage("img").addToArgs("--a").addNewEnv().withName("E").withValue("v").endEnv()
            .withNewResources().addToRequests("cpu", new Quantity("2")).addToRequests("memory", new Quantity("1Gi"))
              .addToLimits("nvidia.com/gpu", new Quantity("1")).addToLimits("nvidia.com/gpumem", new Quantity("1000")).addToLimits("example.com/fpga", new Quantity("1"))
              .endResources().endContainer()
          .addNewContainer().withName("sidecar").withNewResources().addToLimits("memory", new Quantity("64Mi")).endResources().endContainer()
          .addToOverhead("cpu", new Quantity("250m")).addToOverhead("memory", new Quantity("120Mi"))
          .addNewVolume().withName("data").withNewEmptyDir().endEmptyDir().endVolume()
          .addNewToleration().withKey("k").withOperator("Exists").endToleration().endSpec()
        .withNewStatus().withPhase("Running").withPodIP("10.0.0.1").addNewCondition().withType("Ready").withStatus("True").endCondition()
          .addNewInitContainerStatus().withName("init").withNewState().withNewTerminated().withExitCode(0).withReason("Completed").endTerminated().endState().endInitContainerStatus()
          .addNewContainerStatus().withName("main").withReady(true).endContainerStatus().endStatus()
        .build();
  }

  /** Pods the cache meets: whole, bare, pending, with init containers running or without an exit code, with nulls. */
  private static List<String> pods() {
    List<String> out = new ArrayList<>();
    out.add(FULL.asJson(full()));
    out.add(FULL.asJson(new PodBuilder().withNewMetadata().withName("bare").withNamespace("ns").endMetadata().build()));
    out.add(FULL.asJson(new PodBuilder().withNewMetadata().withName("pending").withNamespace("ns").withUid("u2").endMetadata()
        .withNewSpec().addNewContainer().withName("c").withNewResources().endResources().endContainer().endSpec().withNewStatus().withPhase("Pending").endStatus().build()));
    out.add(FULL.asJson(new PodBuilder().withNewMetadata().withName("init").withNamespace("ns").endMetadata()
        .withNewSpec().addNewInitContainer().withName("i").endInitContainer().addNewContainer().withName("c").endContainer().endSpec()
        .withNewStatus().addNewInitContainerStatus().withName("i").withNewState().withNewRunning().endRunning().endState().endInitContainerStatus()
          .addNewInitContainerStatus().withName("j").withNewState().withNewTerminated().endTerminated().endState().endInitContainerStatus().endStatus().build()));
    // Written by hand: nulls where the model has collections, an empty status list, a deletion time,
    // quantities as numbers, and kind and apiVersion last.
    out.add("""
        {"metadata":{"name":"hand","namespace":"ns","annotations":null,"labels":{},"deletionTimestamp":"2026-12-02T11:00:00Z"},
         "spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":2,"cpu":1.5},"requests":null}}],"initContainers":null,"overhead":null},
         "status":{"phase":"Running","initContainerStatuses":[]},"kind":"Pod","apiVersion":"v1"}""");
    out.add("""
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"ann","namespace":"ns","annotations":{"hami.io/vgpu-time":"1764496800","hami.io/bind-phase":null}},
         "spec":null,"status":null}""");
    return out;
  }

  private static Pod viaCopy(String json) {
    return LeanStore.lean(FULL.unmarshal(json, Pod.class), RESOURCES, (annotation, length) -> {});
  }

  @Test
  void aPodReadLeanIsTheLeanCopyOfTheFullPod() {
    for (String json : pods()) {
      assertThat(lean.unmarshal(json, Pod.class)).as(json).isEqualTo(viaCopy(json));
    }
  }

  @Test
  void aPodListReadLeanHoldsTheLeanCopies() {
    PodList list = new PodList();
    pods().forEach(json -> list.getItems().add(FULL.unmarshal(json, Pod.class)));
    list.setMetadata(new io.fabric8.kubernetes.api.model.ListMetaBuilder().withContinue("next").withResourceVersion("42").build());
    String json = FULL.asJson(list);
    PodList read = lean.unmarshal(json, PodList.class);
    assertThat(read.getMetadata().getContinue()).isEqualTo("next");
    assertThat(read.getMetadata().getResourceVersion()).isEqualTo("42");
    assertThat(read.getItems())
        .containsExactlyElementsOf(FULL.unmarshal(json, PodList.class).getItems().stream().map(p -> LeanStore.lean(p, RESOURCES, (a, l) -> {})).toList());
  }

  @Test
  void aKeptAnnotationOverItsBoundIsDroppedAndReportedOnce() {
    Pod big = new PodBuilder().withNewMetadata().withName("big").withNamespace("ns")
        .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, "GPU-a,NVIDIA,1000,10:;".repeat(2000))
        .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n".repeat(254)).addToAnnotations(HamiAnnotations.ASSIGNED_TIME, "1764496800").endMetadata().build();
    Pod read = lean.unmarshal(FULL.asJson(big), Pod.class);
    assertThat(read.getMetadata().getAnnotations())
        .containsEntry(HamiAnnotations.DEVICES_ALLOCATED, LeanStore.DROPPED)
        .containsEntry(HamiAnnotations.ASSIGNED_NODE, LeanStore.DROPPED)
        .containsEntry(HamiAnnotations.ASSIGNED_TIME, "1764496800");
    assertThat(dropped).containsExactlyInAnyOrderEntriesOf(Map.of("ns/big|" + HamiAnnotations.DEVICES_ALLOCATED, 44000, "ns/big|" + HamiAnnotations.ASSIGNED_NODE, 254));
    assertThat(read).isEqualTo(LeanStore.lean(big, RESOURCES, (a, l) -> {}));
  }

  private static List<String> nodes() {
    List<String> out = new ArrayList<>();
    out.add(FULL.asJson(new NodeBuilder().withNewMetadata().withName("n1").withUid("u").withResourceVersion("3").addToLabels("gpu", "on")
          .addToAnnotations(HamiAnnotations.NODE_REGISTER, "[]").addToAnnotations(HamiAnnotations.NODE_LOCK, "lock").endMetadata()
        .withNewSpec().withUnschedulable(true).withPodCIDR("10.0.0.0/24").endSpec()
        .withNewStatus().addToAllocatable("nvidia.com/gpu", new Quantity("80")).addToAllocatable("cpu", new Quantity("64"))
          .addNewImage().withNames("registry/image:1").withSizeBytes(1L).endImage().addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus()
        .build()));
    out.add(FULL.asJson(new NodeBuilder().withNewMetadata().withName("bare").endMetadata().build()));
    out.add(FULL.asJson(new NodeBuilder().withNewMetadata().withName("nostatus").endMetadata().withNewSpec().endSpec().withNewStatus().endStatus().build()));
    out.add("""
        {"metadata":{"name":"hand","labels":null,"annotations":{}},"spec":{"unschedulable":false},"status":{"allocatable":null},"kind":"Node","apiVersion":"v1"}""");
    return out;
  }

  @Test
  void aNodeReadLeanIsTheLeanCopyOfTheFullNode() {
    for (String json : nodes()) {
      assertThat(lean.unmarshal(json, Node.class)).as(json).isEqualTo(LeanStore.lean(FULL.unmarshal(json, Node.class)));
    }
    NodeList list = new NodeList();
    nodes().forEach(json -> list.getItems().add(FULL.unmarshal(json, Node.class)));
    String json = FULL.asJson(list);
    assertThat(lean.unmarshal(json, NodeList.class).getItems())
        .containsExactlyElementsOf(FULL.unmarshal(json, NodeList.class).getItems().stream().map(LeanStore::lean).toList());
  }

  private static String event(String type, String object) {
    return "{\"type\":\"" + type + "\",\"object\":" + object + "}";
  }

  @Test
  void aWatchEventOfAPodOrANodeCarriesTheLeanObject() {
    for (String json : pods()) {
      WatchEvent e = lean.unmarshal(event("MODIFIED", json), WatchEvent.class);
      assertThat(e.getType()).isEqualTo("MODIFIED");
      assertThat(e.getObject()).as(json).isEqualTo(viaCopy(json));
    }
    for (String json : nodes()) {
      assertThat(lean.unmarshal(event("ADDED", json), WatchEvent.class).getObject()).isEqualTo(LeanStore.lean(FULL.unmarshal(json, Node.class)));
    }
    // The object before the type, as a watch may write it.
    WatchEvent reversed = lean.unmarshal("{\"object\":" + pods().get(0) + ",\"type\":\"DELETED\"}", WatchEvent.class);
    assertThat(reversed.getType()).isEqualTo("DELETED");
    assertThat(reversed.getObject()).isEqualTo(viaCopy(pods().get(0)));
  }

  @Test
  void aWatchEventHandedOverAsTextReadsAsFromItsBytes() {
    // The watch hands each event over as text, which is parsed directly; from bytes it goes the way
    // fabric8 reads a stream, through the module. Both must give the same event, whatever its shape.
    List<String> events = new ArrayList<>();
    for (String json : pods()) {
      events.add(event("MODIFIED", json));
      events.add("{\"object\":" + json + ",\"type\":\"DELETED\"}");
      events.add(" {\"type\":\"ADDED\",\"extra\":{\"a\":[1,2]},\"object\":" + json + "}\n");
    }
    for (String json : nodes()) {
      events.add(event("ADDED", json));
    }
    events.add(event("BOOKMARK", "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"12\"}}"));
    events.add(event("ERROR", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"code\":410}"));
    events.add(event("ADDED", "{\"apiVersion\":\"apps/v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"not-core\"}}"));
    events.add("{\"type\":\"ADDED\",\"object\":null}");
    events.add("{\"type\":\"ADDED\"}");
    for (String text : events) {
      WatchEvent fromBytes = lean.unmarshal(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), WatchEvent.class);
      WatchEvent fromText = lean.unmarshal(text, WatchEvent.class);
      assertThat(fromText.getType()).as(text).isEqualTo(fromBytes.getType());
      assertThat(fromText.getObject()).as(text).isEqualTo(fromBytes.getObject());
    }
  }

  @Test
  void aMalformedWatchEventAsTextIsRefusedAsFabric8RefusesIt() {
    assertThatThrownBy(() -> lean.unmarshal(event("MODIFIED", "{\"kind\":\"Pod\",\"metadata\":[]}"), WatchEvent.class))
        .isInstanceOf(KubernetesClientException.class).rootCause().isInstanceOf(JacksonException.class).hasMessageContaining("metadata must be an object");
    assertThatThrownBy(() -> lean.unmarshal("[1]", WatchEvent.class)).isInstanceOf(KubernetesClientException.class);
    assertThatThrownBy(() -> lean.unmarshal("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"", WatchEvent.class))
        .isInstanceOf(KubernetesClientException.class);
  }

  @Test
  void aWatchEventOfAnotherKindReadsAsFabric8ReadsIt() {
    String gone = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version\",\"reason\":\"Expired\",\"code\":410}";
    WatchEvent error = lean.unmarshal(event("ERROR", gone), WatchEvent.class);
    assertThat(error.getType()).isEqualTo("ERROR");
    assertThat(error.getObject()).isInstanceOf(Status.class).isEqualTo(FULL.unmarshal(gone, Status.class));
    String quota = "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"gpu\",\"namespace\":\"ns\"},\"spec\":{\"hard\":{\"limits.nvidia.com/gpumem\":\"4096\"}}}";
    assertThat((KubernetesResource) lean.unmarshal(event("ADDED", quota), WatchEvent.class).getObject())
        .isInstanceOf(ResourceQuota.class).isEqualTo(FULL.unmarshal(quota, ResourceQuota.class));
  }

  @Test
  void aMalformedPodIsRefusedNotGuessed() {
    // fabric8 wraps the parser's refusal in its own exception.
    assertThatThrownBy(() -> lean.unmarshal("{\"kind\":\"Pod\",\"metadata\":[]}", Pod.class))
        .rootCause().isInstanceOf(JacksonException.class).hasMessageContaining("metadata must be an object");
    assertThatThrownBy(() -> lean.unmarshal("{\"kind\":\"Pod\",\"metadata\":{\"name\":{}}}", Pod.class))
        .rootCause().isInstanceOf(JacksonException.class).hasMessageContaining("expected a string");
  }
}
