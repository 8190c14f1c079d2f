package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Binding;
import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The Binding and Event bodies the scheduler writes by hand: golden strings, and the objects fabric8's model reads from them. */
@EnableKubernetesMockClient(crud = true)
class WrittenJsonTest {
  private static final KubernetesSerialization MODEL = new KubernetesSerialization();
  KubernetesClient client;

  @Test
  void aBindingCarriesTheMarkForThePod() {
    Map<String, String> mark = new LinkedHashMap<>();
    mark.put(HamiAnnotations.BIND_PHASE, "allocating");
    mark.put(HamiAnnotations.BIND_TIME, "1764547200");
    String json = Extender.bindingJson(new PodRef("team-a", "p1"), "uid-1", "worker1", mark);
    assertThat(json).isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"team-a\",\"uid\":\"uid-1\","
        + "\"annotations\":{\"hami.io/bind-phase\":\"allocating\",\"hami.io/bind-time\":\"1764547200\"}},"
        + "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"worker1\"}}");
    Binding expected = new BindingBuilder()
        .withNewMetadata().withName("p1").withNamespace("team-a").withUid("uid-1").withAnnotations(mark).endMetadata()
        .withNewTarget().withApiVersion("v1").withKind("Node").withName("worker1").endTarget().build();
    assertThat(MODEL.unmarshal(json, Binding.class)).isEqualTo(expected);
    // Without a mark or a UID (a pod without devices), neither is written.
    assertThat(Extender.bindingJson(new PodRef("team-a", "plain"), null, "worker1", Map.of()))
        .isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"plain\",\"namespace\":\"team-a\"},"
            + "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"worker1\"}}");
  }

  @Test
  void anEventIsTheModelsEvent() {
    EventRecorder recorder = new EventRecorder(client, "vgpu-scheduler", Clock.fixed(Instant.parse("2026-12-02T10:00:00.700Z"), ZoneOffset.UTC));
    try {
      ObjectReference involved = new ObjectReferenceBuilder().withApiVersion("v1").withKind("Pod").withName("p1").withNamespace("team-a").withUid("uid-1").build();
      Instant at = Instant.parse("2026-12-02T10:00:00.700Z");
      String json = recorder.json("p1.19ade0f2b40" + "1", "team-a", involved, "Normal", "FilteringSucceed", "find fit node(worker1) \"quoted\"", at);
      assertThat(json).isEqualTo("{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"p1.19ade0f2b401\",\"namespace\":\"team-a\"},\"count\":1,"
          + "\"firstTimestamp\":\"2026-12-02T10:00:00Z\",\"involvedObject\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"name\":\"p1\",\"namespace\":\"team-a\",\"uid\":\"uid-1\"},"
          + "\"lastTimestamp\":\"2026-12-02T10:00:00Z\",\"message\":\"find fit node(worker1) \\\"quoted\\\"\",\"reason\":\"FilteringSucceed\","
          + "\"source\":{\"component\":\"vgpu-scheduler\"},\"type\":\"Normal\"}");
      Event expected = new EventBuilder()
          .withNewMetadata().withName("p1.19ade0f2b401").withNamespace("team-a").endMetadata()
          .withInvolvedObject(involved).withType("Normal").withReason("FilteringSucceed").withMessage("find fit node(worker1) \"quoted\"")
          .withNewSource().withComponent("vgpu-scheduler").endSource()
          .withFirstTimestamp("2026-12-02T10:00:00Z").withLastTimestamp("2026-12-02T10:00:00Z").withCount(1).build();
      assertThat(MODEL.unmarshal(json, Event.class)).isEqualTo(expected);
      // A message over 1024 characters is cut.
      String cut = MODEL.unmarshal(recorder.json("e", "ns", involved, "Warning", "FilteringFailed", "x".repeat(2000), at), Event.class).getMessage();
      assertThat(cut).hasSize(1024).endsWith("...");
    } finally {
      recorder.close();
    }
  }
}
