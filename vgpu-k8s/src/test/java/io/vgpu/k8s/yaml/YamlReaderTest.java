package io.vgpu.k8s.yaml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.core.JacksonException;

class YamlReaderTest {

  @Test
  void keepsEveryValuesPositionAndText() {
    YamlMap root = YamlReader.read("a: 1\nb: \"20000\"\nc:\n  d: [x, 1.50, true, null]\n", "f.yaml").asMap("root");
    YamlScalar a = root.require("a", "root").asScalar("a");
    assertThat(a.text()).isEqualTo("1");
    assertThat(a.kind()).isEqualTo(YamlScalar.Kind.INTEGER);
    assertThat(a.position()).hasToString("f.yaml:1:4");
    YamlScalar b = root.require("b", "root").asScalar("b");
    assertThat(b.kind()).isEqualTo(YamlScalar.Kind.STRING);
    List<YamlNode> d = root.require("c", "root").asMap("c").require("d", "c").asList("d").items();
    assertThat(d).extracting(n -> ((YamlScalar) n).text()).containsExactly("x", "1.50", "true", "");
    assertThat(d).extracting(n -> ((YamlScalar) n).kind())
        .containsExactly(YamlScalar.Kind.STRING, YamlScalar.Kind.DECIMAL, YamlScalar.Kind.BOOLEAN, YamlScalar.Kind.NULL);
    assertThat(d.get(1).position()).hasToString("f.yaml:4:10");
    assertThat(root.entries().get("c").keyPosition()).hasToString("f.yaml:3:1");
  }

  @Test
  void readsJsonWithPositions() {
    YamlMap root = YamlReader.read("{\n  \"a\": {\"b\": 7}\n}", "f.json").asMap("root");
    assertThat(root.require("a", "").asMap("a").require("b", "a").position()).hasToString("f.json:2:14");
  }

  @Test
  void reportsUnknownKeysWithTheirPositionAndTheKnownOnes() {
    YamlMap root = YamlReader.read("name: x\nlables: {}\n", "s.yaml").asMap("root");
    assertThatThrownBy(() -> root.requireKnownKeys("nodes[0]", List.of("name", "labels")))
        .isInstanceOf(InputException.class)
        .hasMessage("s.yaml:2:1: unknown key 'lables' in nodes[0] (known keys: name, labels)");
  }

  @Test
  void reportsWrongTypesNamingFieldAndValue() {
    YamlMap root = YamlReader.read("count: two\nlist: 3\n", "s.yaml").asMap("root");
    assertThatThrownBy(() -> root.require("count", "").asScalar("gpus.count").asInt("gpus.count", 0, 100))
        .hasMessage("s.yaml:1:8: gpus.count: expected a whole number, got 'two'");
    assertThatThrownBy(() -> root.require("list", "").asList("nodes")).hasMessage("s.yaml:2:7: nodes: expected a list, got '3'");
    assertThatThrownBy(() -> root.require("missing", "gpus")).hasMessage("s.yaml:1:1: gpus: missing required key 'missing'");
  }

  @Test
  void rejectsDuplicateKeysSyntaxErrorsExtraDocumentsAndEmptyFiles() {
    assertThatThrownBy(() -> YamlReader.read("a: 1\na: 2\n", "s.yaml")).hasMessage("s.yaml:2:1: duplicate key 'a'");
    assertThatThrownBy(() -> YamlReader.read("a: [1, 2\n", "s.yaml"))
        .isInstanceOf(InputException.class)
        .hasMessageStartingWith("s.yaml:")
        .hasMessageContaining("not well-formed");
    assertThatThrownBy(() -> YamlReader.read("a: 1\n---\nb: 2\n", "s.yaml")).hasMessageContaining("expected one document");
    assertThatThrownBy(() -> YamlReader.read("# nothing\n", "s.yaml")).hasMessage("s.yaml:1:1: the document is empty");
  }

  @Test
  void reportsAMissingFileInOneLine(@TempDir Path dir) {
    assertThatThrownBy(() -> YamlReader.read(dir.resolve("nope.yaml"))).hasMessage(dir.resolve("nope.yaml") + ": no such file");
  }

  @Test
  void readsFiles(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("s.yaml");
    Files.writeString(file, "a: 1\n");
    assertThat(YamlReader.read(file).position().file()).isEqualTo(file.toString());
  }

  @Test
  void locatesTheValueABindingErrorPointsAt() {
    YamlNode root = YamlReader.read("metadata: {name: p}\nspec:\n  containers: 5\n", "p.yaml");
    JacksonException error = bindingError(root);
    assertThat(JacksonTrees.locate(root, error)).hasToString("p.yaml:3:15");
    assertThat(JacksonTrees.describePath(error)).isEqualTo("spec.containers");
  }

  @Test
  void convertsToJacksonKeepingNumbersExact() {
    Pod pod = PodJson.fromTree(JacksonTrees.toJson(YamlReader.read(
        "metadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {a: 1.50, b: 010}}}]}\n", "p.yaml")));
    assertThat(pod.getSpec().getContainers().get(0).getResources().getLimits().get("a")).hasToString("1.50");
    assertThat(pod.getSpec().getContainers().get(0).getResources().getLimits().get("b")).hasToString("010");
  }

  @Test
  void anchorsAliasesAndMergeKeysAreResolved() {
    YamlMap root = YamlReader.read(
        "base: &limits {memory: 4096, cores: 25}\n"
            + "copy: *limits\n"
            + "name: &n worker\n"
            + "again: *n\n"
            + "merged:\n"
            + "  <<: *limits\n"
            + "  cores: 50\n"
            + "several:\n"
            + "  <<: [{a: 1}, {a: 2, b: 3}]\n",
        "m.yaml").asMap("root");
    YamlMap copy = root.require("copy", "").asMap("copy");
    assertThat(copy.require("memory", "copy").asScalar("memory").text()).isEqualTo("4096");
    // An alias keeps the positions of the value it names: errors point where the value was written.
    assertThat(copy.require("memory", "copy").position()).hasToString("m.yaml:1:24");
    assertThat(root.require("again", "").asScalar("again").text()).isEqualTo("worker");
    YamlMap merged = root.require("merged", "").asMap("merged");
    assertThat(merged.entries().keySet()).containsExactly("memory", "cores");
    assertThat(merged.require("cores", "merged").asScalar("cores").text()).isEqualTo("50");
    assertThat(merged.require("memory", "merged").position()).hasToString("m.yaml:1:24");
    YamlMap several = root.require("several", "").asMap("several");
    assertThat(several.require("a", "").asScalar("a").text()).as("the first mapping of the list wins").isEqualTo("1");
    assertThat(several.require("b", "").asScalar("b").text()).isEqualTo("3");
  }

  @Test
  void badAliasesAndMergesAreOneLineErrors() {
    assertThatThrownBy(() -> YamlReader.read("a: *nowhere\n", "m.yaml")).isInstanceOf(InputException.class).hasMessage("m.yaml:1:4: unknown alias '*nowhere'");
    assertThatThrownBy(() -> YamlReader.read("a: {<<: 3}\n", "m.yaml"))
        .isInstanceOf(InputException.class).hasMessage("m.yaml:1:9: '<<' merges a mapping or a list of mappings, got '3'");
    assertThatThrownBy(() -> YamlReader.read("a: {b: 1, b: 2, <<: {c: 1}}\n", "m.yaml")).hasMessage("m.yaml:1:11: duplicate key 'b'");
  }

  @Test
  void aliasesCannotExpandWithoutBound() {
    StringBuilder yaml = new StringBuilder("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for (int i = 1; i < 9; i++) {
      yaml.append("a").append(i).append(": &a").append(i).append(" [");
      for (int j = 0; j < 10; j++) {
        yaml.append(j == 0 ? "" : ", ").append("*a").append(i - 1);
      }
      yaml.append("]\n");
    }
    assertThatThrownBy(() -> YamlReader.read(yaml.toString(), "laughs.yaml"))
        .isInstanceOf(InputException.class).hasMessageContaining("aliases expand the document beyond");
  }

  @Test
  void aBadValueReachedThroughAnAliasIsReportedWhereItWasWritten() {
    YamlNode root = YamlReader.read("shared: &c {name: c, image: x, resources: {limits: {a: [1]}}}\nmetadata: {name: p}\nspec:\n  containers: [*c]\n", "p.yaml");
    assertThat(JacksonTrees.locate(root, bindingError(root)).line()).isEqualTo(1);
  }

  /** The error binding {@code root} as a Pod raises. */
  private static JacksonException bindingError(YamlNode root) {
    try {
      PodJson.fromTree(JacksonTrees.toJson(root));
    } catch (JacksonException e) {
      return e;
    }
    throw new AssertionError("the tree bound as a Pod");
  }
}
