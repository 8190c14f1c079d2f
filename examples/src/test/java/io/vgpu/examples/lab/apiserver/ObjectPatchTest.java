package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.k8s.pod.PodJson;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The patch types of the API, applied to a stored object. */
class ObjectPatchTest {
  private static final JsonMapper JSON = PodJson.mapper();

  private static JsonNode json(String text) {
    return JSON.readTree(text.replace('\'', '"'));
  }

  private static final JsonNode POD = json("""
      {'metadata': {'name': 'p', 'annotations': {'a': '1', 'b': '2'}, 'finalizers': ['f1']},
       'spec': {'containers': [{'name': 'c', 'image': 'i', 'env': [{'name': 'X', 'value': '1'}]}]},
       'status': {'phase': 'Pending', 'conditions': [{'type': 'PodScheduled', 'status': 'True'}, {'type': 'Ready', 'status': 'False'}]}}""");

  @Test
  void aMergePatchSetsKeysRemovesNullsAndReplacesLists() {
    JsonNode out = ObjectPatch.apply(POD, "application/merge-patch+json", json("{'metadata': {'annotations': {'a': null, 'c': '3'}}, 'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}"));
    assertThat(out.path("metadata").path("annotations")).isEqualTo(json("{'b': '2', 'c': '3'}"));
    assertThat(out.path("status").path("conditions")).isEqualTo(json("[{'type': 'Ready', 'status': 'True'}]"));
    assertThat(POD.path("metadata").path("annotations").has("a")).as("the stored object is not changed").isTrue();
  }

  @Test
  void aStrategicMergePatchMergesTheListsTheApiMergesByKey() {
    JsonNode out = ObjectPatch.apply(POD, "application/strategic-merge-patch+json; charset=utf-8", json("""
        {'$setElementOrder/conditions': [{'type': 'PodScheduled'}, {'type': 'Ready'}],
         'metadata': {'annotations': {'a': null}, 'finalizers': ['f2']},
         'spec': {'containers': [{'name': 'c', 'env': [{'name': 'Y', 'value': '2'}]}]},
         'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True'}, {'type': 'Initialized', 'status': 'True'}]}}"""));
    assertThat(out.path("status").path("phase").asString()).isEqualTo("Running");
    assertThat(out.path("status").path("conditions")).isEqualTo(json(
        "[{'type': 'PodScheduled', 'status': 'True'}, {'type': 'Ready', 'status': 'True'}, {'type': 'Initialized', 'status': 'True'}]"));
    assertThat(out.path("spec").path("containers").path(0).path("image").asString()).isEqualTo("i");
    assertThat(out.path("spec").path("containers").path(0).path("env")).isEqualTo(json("[{'name': 'X', 'value': '1'}, {'name': 'Y', 'value': '2'}]"));
    assertThat(out.path("metadata").path("finalizers")).isEqualTo(json("['f1', 'f2']"));
    assertThat(out.path("metadata").path("annotations")).isEqualTo(json("{'b': '2'}"));
  }

  @Test
  void aStrategicMergePatchDeletesAndReplacesOnItsDirectives() {
    JsonNode out = ObjectPatch.apply(POD, "application/strategic-merge-patch+json",
        json("{'metadata': {'annotations': {'$patch': 'replace', 'z': '9'}}, 'status': {'conditions': [{'type': 'Ready', '$patch': 'delete'}]}}"));
    assertThat(out.path("metadata").path("annotations")).isEqualTo(json("{'z': '9'}"));
    assertThat(out.path("status").path("conditions")).isEqualTo(json("[{'type': 'PodScheduled', 'status': 'True'}]"));
    assertThatThrownBy(() -> ObjectPatch.apply(POD, "application/strategic-merge-patch+json", json("{'status': {'conditions': [{'status': 'True'}]}}")))
        .isInstanceOf(ObjectPatch.PatchException.class).hasMessage("status.conditions: an element of a strategic merge patch needs its merge key 'type'");
  }

  @Test
  void aJsonPatchAppliesItsOperationsAndFailsWhenOneDoesNotApply() {
    JsonNode out = ObjectPatch.apply(POD, "application/json-patch+json", json("[{'op': 'replace', 'path': '/metadata/annotations/a', 'value': 'x'}]"));
    assertThat(out.path("metadata").path("annotations").path("a").asString()).isEqualTo("x");
    assertThatThrownBy(() -> ObjectPatch.apply(POD, "application/json-patch+json", json("[{'op': 'test', 'path': '/metadata/name', 'value': 'q'}]")))
        .isInstanceOf(ObjectPatch.PatchException.class).satisfies(e -> assertThat(((ObjectPatch.PatchException) e).code()).isEqualTo(422));
  }

  @Test
  void otherPatchTypesAreUnsupportedMediaTypes() {
    assertThatThrownBy(() -> ObjectPatch.apply(POD, "application/apply-patch+yaml", json("{}")))
        .isInstanceOf(ObjectPatch.PatchException.class)
        .satisfies(e -> assertThat(((ObjectPatch.PatchException) e).code()).isEqualTo(415))
        .hasMessageStartingWith("the server does not take patches of type 'application/apply-patch+yaml'");
  }
}
