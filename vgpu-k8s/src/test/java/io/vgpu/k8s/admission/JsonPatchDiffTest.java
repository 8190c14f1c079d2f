package io.vgpu.k8s.admission;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class JsonPatchDiffTest {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private static String diff(String from, String to) {
    JsonNode a = JSON.readTree(from);
    JsonNode b = JSON.readTree(to);
    return JsonPatchDiff.diff(a, b).toString();
  }

  @Test
  void equalDocumentsNeedNoOperation() {
    assertThat(diff("{\"a\":[1,{\"b\":2}]}", "{\"a\":[1,{\"b\":2}]}")).isEqualTo("[]");
  }

  @Test
  void objectsRemoveAndChangeInOriginalOrderThenAddInTargetOrder() {
    assertThat(diff("{\"x\":1,\"y\":{\"z\":true},\"gone\":0}", "{\"new2\":2,\"x\":1,\"y\":{\"z\":false},\"new1\":1}"))
        .isEqualTo(
            "[{\"op\":\"replace\",\"path\":\"/y/z\",\"value\":false},"
                + "{\"op\":\"remove\",\"path\":\"/gone\"},"
                + "{\"op\":\"add\",\"path\":\"/new2\",\"value\":2},"
                + "{\"op\":\"add\",\"path\":\"/new1\",\"value\":1}]");
  }

  @Test
  void arraysAppendAscendingAndTruncateFromTheEnd() {
    assertThat(diff("{\"env\":[{\"name\":\"A\"}]}", "{\"env\":[{\"name\":\"A\"},{\"name\":\"B\"},{\"name\":\"C\"}]}"))
        .isEqualTo("[{\"op\":\"add\",\"path\":\"/env/1\",\"value\":{\"name\":\"B\"}},{\"op\":\"add\",\"path\":\"/env/2\",\"value\":{\"name\":\"C\"}}]");
    assertThat(diff("[1,2,3]", "[1]")).isEqualTo("[{\"op\":\"remove\",\"path\":\"/2\"},{\"op\":\"remove\",\"path\":\"/1\"}]");
  }

  @Test
  void replacesValuesOfDifferentKindsAndTheWholeDocument() {
    assertThat(diff("{\"a\":[1]}", "{\"a\":{\"b\":1}}")).isEqualTo("[{\"op\":\"replace\",\"path\":\"/a\",\"value\":{\"b\":1}}]");
    assertThat(diff("1", "2")).isEqualTo("[{\"op\":\"replace\",\"path\":\"\",\"value\":2}]");
  }

  @Test
  void escapesSlashesAndTildesInKeys() {
    assertThat(diff("{}", "{\"nvidia.com/gpu\":\"1\",\"a~b\":1}"))
        .isEqualTo("[{\"op\":\"add\",\"path\":\"/nvidia.com~1gpu\",\"value\":\"1\"},{\"op\":\"add\",\"path\":\"/a~0b\",\"value\":1}]");
  }
}
