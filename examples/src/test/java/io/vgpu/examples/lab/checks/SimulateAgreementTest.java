package io.vgpu.examples.lab.checks;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.yaml.YamlReader;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The placement-agreement check and the pods a patch changed. */
class SimulateAgreementTest {
  private static final String NODES = "nodes: [{name: w1, gpus: {profile: A100-SXM4-40GB, count: 1}}]\n";
  private static final String CREATE = "  - create: {metadata: {name: p}, spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1000}}}]}}\n";
  private static final String PATCH = "  - patch: {pod: p, metadata: {annotations: {hami.io/vgpu-node: w9}}}\n";

  private static Scenario scenario(String events) {
    return new ScenarioParser(Set.of()).parse(YamlReader.read(NODES + "events:\n" + events, "s.yaml"));
  }

  /** A lab report in which pod p stayed Pending, with the given timeline entries. */
  private static JsonNode report(String timeline) {
    return PodJson.mapper().readTree(("{'pods': [{'namespace': 'default', 'name': 'p', 'phase': 'Pending', 'node': '', 'containers': []}], 'timeline': " + timeline + "}")
        .replace('\'', '"'));
  }

  @Test
  void aPodAnAllowedPatchChangedIsLeftOutAndAnyOtherIsCompared() {
    assertThat(SimulateAgreement.differences(scenario(CREATE), report("[{}]"))).containsExactly("default/p: simulate places it on w1, the lab leaves it Pending");
    assertThat(SimulateAgreement.differences(scenario(CREATE + PATCH), report("[{}, {'patch': {'allowed': true}}]"))).isEmpty();
    assertThat(SimulateAgreement.differences(scenario(CREATE + PATCH), report("[{}, {'patch': {'allowed': false, 'message': 'no'}}]"))).hasSize(1);
  }

  @Test
  void aPodCreatedAgainAfterThePatchIsComparedAgain() {
    String events = CREATE + PATCH + "  - delete: p\n" + CREATE;
    assertThat(SimulateAgreement.differences(scenario(events), report("[{}, {'patch': {'allowed': true}}, {}, {}]"))).hasSize(1);
  }
}
