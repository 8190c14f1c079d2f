package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.core.JacksonException;

/** kube-scheduler's filter arguments, read streaming: the pod, the node objects, the names against the last call's. */
class ExtenderArgsReaderTest {
  private final ExtenderArgsReader reader = new ExtenderArgsReader(PodJson.mapper());

  /** The pod of {@code {"Pod": podJson}} as the filter reads it. */
  static Pod readPod(String podJson) {
    return new ExtenderArgsReader(PodJson.mapper()).read(("{\"Pod\":" + podJson + "}").getBytes(StandardCharsets.UTF_8)).pod();
  }

  private ExtenderArgs read(String body) {
    return reader.read(body.getBytes(StandardCharsets.UTF_8));
  }

  private static String names(List<String> names) {
    StringBuilder out = new StringBuilder("{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"Nodes\":null,\"NodeNames\":[");
    for (int i = 0; i < names.size(); i++) {
      out.append(i > 0 ? "," : "").append('"').append(names.get(i)).append('"');
    }
    return out.append("]}").toString();
  }

  private static List<String> nodes(int count) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add("gpu-node-" + i);
    }
    return out;
  }

  @Test
  void theSameNamesAreThePreviousCallsList() {
    List<String> first = read(names(nodes(500))).nodeNames();
    assertThat(first).containsExactlyElementsOf(nodes(500));
    List<String> second = read(names(nodes(500))).nodeNames();
    assertThat(second).isSameAs(first);
  }

  @Test
  void otherNamesMakeANewList() {
    List<String> first = read(names(nodes(100))).nodeNames();
    List<String> changed = new ArrayList<>(nodes(100));
    changed.set(60, "gpu-node-x");
    List<String> second = read(names(changed)).nodeNames();
    assertThat(second).containsExactlyElementsOf(changed).isNotSameAs(first);
    // The same names written otherwise (spacing) are read again, and equal.
    assertThat(read(names(changed).replace(",", ", ")).nodeNames()).isEqualTo(changed).isNotSameAs(second);
    // Fewer, more, none, and back.
    assertThat(read(names(nodes(40))).nodeNames()).containsExactlyElementsOf(nodes(40));
    assertThat(read(names(nodes(120))).nodeNames()).containsExactlyElementsOf(nodes(120));
    assertThat(read(names(List.of())).nodeNames()).isEmpty();
    assertThat(read(names(nodes(3))).nodeNames()).containsExactly("gpu-node-0", "gpu-node-1", "gpu-node-2");
    // Names with escapes and non-ASCII characters compare as their text.
    List<String> odd = List.of("n\\u00e9ud", "node\\\"q");
    assertThat(read(names(odd)).nodeNames()).containsExactly("n\u00e9ud", "node\"q");
    assertThat(read(names(odd)).nodeNames()).containsExactly("n\u00e9ud", "node\"q");
  }

  @Test
  void unchangedNamesAreFoundByTheirBytesWhereverTheyStandAndThePodIsStillRead() {
    List<String> first = read(names(nodes(50))).nodeNames();
    String namesJson = names(nodes(50)).substring(names(nodes(50)).indexOf('['), names(nodes(50)).length() - 1);
    // NodeNames before the pod, and text that looks like the member inside the pod's strings and objects.
    ExtenderArgs args = read("{ \"NodeNames\" : " + namesJson + ", \"Pod\":{\"metadata\":{\"name\":\"q\",\"namespace\":\"ns\","
        + "\"annotations\":{\"x\":\"\\\"NodeNames\\\":[\\\"evil\\\"]\"}},\"spec\":{\"NodeNames\":[\"nested\"]}},\"Nodes\":null}");
    assertThat(args.nodeNames()).isSameAs(first);
    assertThat(args.pod().getMetadata().getName()).isEqualTo("q");
    assertThat(args.pod().getMetadata().getAnnotations()).containsEntry("x", "\"NodeNames\":[\"evil\"]");
    // A second NodeNames wins, as it does for the parser.
    assertThat(read("{\"NodeNames\":" + namesJson + ",\"NodeNames\":[\"other\"]}").nodeNames()).containsExactly("other");
    // Brackets and escaped quotes inside names do not end the array.
    List<String> odd = List.of("a]b", "c\\\"[d");
    List<String> oddRead = read(names(odd)).nodeNames();
    assertThat(oddRead).containsExactly("a]b", "c\"[d");
    assertThat(read(names(odd)).nodeNames()).isSameAs(oddRead);
  }

  @Test
  void theScanFindsOnlyTheTopLevelMembersArray() {
    byte[] key = "NodeNames".getBytes(StandardCharsets.US_ASCII);
    String body = "{\"Pod\":{\"NodeNames\":[1]},\"s\":\"\\\"NodeNames\\\":[2]\", \"NodeNames\" :\t[\"a\", \"]\"] }";
    long span = ExtenderArgsReader.topLevelArray(body.getBytes(StandardCharsets.UTF_8), key);
    assertThat(body.substring((int) (span >>> 32), (int) span)).isEqualTo("[\"a\", \"]\"]");
    for (String none : List.of("{\"NodeNames\":null}", "{\"Pod\":{\"NodeNames\":[1]}}", "[\"NodeNames\",[1]]", "{\"NodeNames\":[\"a\"", "{\"Node\\u004eames\":[1]}",
        "{\"a\":\"unterminated", "{} {\"NodeNames\":[1]}", "")) {
      assertThat(ExtenderArgsReader.topLevelArray(none.getBytes(StandardCharsets.UTF_8), key)).as(none).isEqualTo(-1);
    }
  }

  @Test
  void theArgumentsAsTheyCome() {
    ExtenderArgs none = read("{\"Pod\":null,\"Nodes\":null,\"NodeNames\":null,\"Extra\":{\"a\":[1,2]}}");
    assertThat(none.pod()).isNull();
    assertThat(none.nodes()).isNull();
    assertThat(none.nodeNames()).isNull();
    ExtenderArgs withNodes = read("{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"}},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"n1\","
        + "\"annotations\":{\"a\":\"b\"}},\"status\":{\"images\":[{\"names\":[\"i\"]}]}}]}}");
    assertThat(withNodes.pod().getMetadata().getNamespace()).isEqualTo("ns");
    // A dry run's node objects are whole.
    assertThat(withNodes.nodes().getItems()).singleElement().satisfies(n -> {
      assertThat(n.getMetadata().getAnnotations()).containsEntry("a", "b");
      assertThat(n.getStatus().getImages()).hasSize(1);
    });
  }

  @Test
  void aPodsNodeAffinityIsRead() {
    Pod pod = new PodBuilder().withNewMetadata().withName("p").withNamespace("ns").endMetadata()
        .withNewSpec().withNewAffinity().withNewNodeAffinity().withNewRequiredDuringSchedulingIgnoredDuringExecution()
          .addNewNodeSelectorTerm().addNewMatchExpression().withKey("zone").withOperator("In").withValues("a").endMatchExpression().endNodeSelectorTerm()
          .endRequiredDuringSchedulingIgnoredDuringExecution().endNodeAffinity().endAffinity().endSpec().build();
    Pod read = readPod(PodJson.mapper().writeValueAsString(pod));
    assertThat(read.getSpec().getAffinity()).isEqualTo(pod.getSpec().getAffinity());
    assertThat(NodeSelection.allows(read, "n1", Map.of("zone", "a"))).isTrue();
    assertThat(NodeSelection.allows(read, "n2", Map.of("zone", "b"))).isFalse();
  }

  @Test
  void malformedArgumentsAreRefused() {
    assertThatThrownBy(() -> read("{\"NodeNames\":[\"a\",1]}")).isInstanceOf(JacksonException.class).hasMessageContaining("NodeNames must hold strings");
    assertThatThrownBy(() -> read("{\"NodeNames\":{}}")).isInstanceOf(JacksonException.class).hasMessageContaining("NodeNames must be an array");
    assertThatThrownBy(() -> read("[]")).isInstanceOf(JacksonException.class);
    assertThatThrownBy(() -> read("{} {}")).isInstanceOf(JacksonException.class).hasMessageContaining("one object");
    assertThatThrownBy(() -> read("{\"NodeNames\":[\"a\"")).isInstanceOf(JacksonException.class);
    assertThatThrownBy(() -> read("{\"Pod\":{\"spec\":{\"containers\":{}}}}")).isInstanceOf(JacksonException.class).hasMessageContaining("a container list must be an array");
  }

  @Test
  void theRequestShapeKeepsWhatTheFilterReads() {
    Pod read = readPod(new KubernetesSerialization().asJson(LeanReaderTest.full()));
    Pod whole = LeanReaderTest.full();
    assertThat(read.getMetadata().getName()).isEqualTo("p");
    assertThat(read.getMetadata().getUid()).isEqualTo("u1");
    assertThat(read.getMetadata().getCreationTimestamp()).isEqualTo("2026-12-02T10:00:00Z");
    assertThat(read.getMetadata().getAnnotations()).isEqualTo(whole.getMetadata().getAnnotations());
    assertThat(read.getMetadata().getLabels()).isEqualTo(whole.getMetadata().getLabels());
    assertThat(read.getSpec().getSchedulerName()).isEqualTo("vgpu-scheduler");
    assertThat(read.getSpec().getNodeSelector()).containsExactlyEntriesOf(Map.of("zone", "a"));
    assertThat(read.getSpec().getOverhead()).isEqualTo(whole.getSpec().getOverhead());
    assertThat(read.getSpec().getContainers()).extracting(c -> c.getResources()).containsExactlyElementsOf(whole.getSpec().getContainers().stream().map(c -> c.getResources()).toList());
    assertThat(read.getSpec().getInitContainers().get(0).getRestartPolicy()).isEqualTo("Always");
    assertThat(read.getStatus().getPhase()).isEqualTo("Running");
    // What the filter never reads is not there.
    assertThat(read.getMetadata().getManagedFields()).isNullOrEmpty();
    assertThat(read.getMetadata().getOwnerReferences()).isNullOrEmpty();
    assertThat(read.getSpec().getVolumes()).isNullOrEmpty();
    assertThat(read.getSpec().getTolerations()).isNullOrEmpty();
    assertThat(read.getSpec().getContainers().get(0).getEnv()).isNullOrEmpty();
    assertThat(read.getSpec().getContainers().get(0).getImage()).isNull();
    assertThat(read.getStatus().getConditions()).isNullOrEmpty();
    assertThat(read.getStatus().getPodIP()).isNull();
  }
}
