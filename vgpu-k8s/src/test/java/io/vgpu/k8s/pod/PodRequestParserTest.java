package io.vgpu.k8s.pod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.ScoringWeights;
import io.vgpu.k8s.TestPods;
import java.util.List;
import org.junit.jupiter.api.Test;

class PodRequestParserTest {
  private static final long UNSET = ContainerRequest.UNSET;
  private final PodRequestParser parser = new PodRequestParser(ResourceSchema.nvidia());

  @Test
  void readsLimitsPerContainerWithUnsetAmountsAndDefaultNamespace() {
    PodRequest request =
        parser.parse(TestPods.withLimits("nvidia.com/gpu: 2, nvidia.com/gpumem: 4096, nvidia.com/gpucores: 25, cpu: 500m"));
    assertThat(request.pod()).isEqualTo(new PodRef("default", "p"));
    assertThat(request.containers()).containsExactly(new ContainerRequest("gpu", 2, 4096, UNSET, 25));
    assertThat(request.initContainers()).isEmpty();
    assertThat(request.constraints()).isEqualTo(DeviceConstraints.NONE);
    assertThat(request.overrides()).isEqualTo(PolicyOverrides.NONE);
  }

  @Test
  void fallsBackToRequestsAndKeepsInitContainersApart() {
    PodRequest request =
        parser.parse(
            TestPods.yaml(
                """
                metadata: {name: p, namespace: team-a}
                spec:
                  initContainers:
                  - name: setup
                    resources: {requests: {nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 50}}
                  containers:
                  - name: app
                    resources:
                      limits: {nvidia.com/gpu: 1}
                      requests: {nvidia.com/gpu: 3, nvidia.com/gpucores: 30}
                  - name: sidecar
                """));
    assertThat(request.pod()).isEqualTo(new PodRef("team-a", "p"));
    assertThat(request.initContainers()).containsExactly(new ContainerRequest("setup", 1, UNSET, 50, UNSET));
    assertThat(request.containers())
        .containsExactly(new ContainerRequest("app", 1, UNSET, UNSET, 30), ContainerRequest.none("sidecar"));
  }

  @Test
  void readsDeviceConstraintsFromAnnotations() {
    PodRequest request =
        parser.parse(
            TestPods.yaml(
                """
                metadata:
                  name: p
                  annotations:
                    nvidia.com/use-gputype: "A100, H100"
                    nvidia.com/nouse-gputype: T4
                    nvidia.com/use-gpuuuid: GPU-a,GPU-b
                    nvidia.com/nouse-gpuuuid: GPU-c
                    nvidia.com/numa-bind: "true"
                    nvidia.com/vgpu-mode: hami-core
                spec: {containers: [{name: c}]}
                """));
    assertThat(request.constraints())
        .isEqualTo(
            new DeviceConstraints(List.of("A100", " H100"), List.of("T4"), List.of("GPU-a", "GPU-b"), List.of("GPU-c"), true, "hami-core"));
  }

  @Test
  void parsesNumaBindAsGoDoes() {
    for (String yes : List.of("1", "t", "T", "TRUE", "true", "True")) {
      assertThat(parser.parse(annotated("nvidia.com/numa-bind", yes)).constraints().numaBind()).as(yes).isTrue();
    }
    for (String no : List.of("0", "false", "yes", "on", "")) {
      assertThat(parser.parse(annotated("nvidia.com/numa-bind", no)).constraints().numaBind()).as(no).isFalse();
    }
  }

  @Test
  void readsPolicyOverrides() {
    PodRequest request =
        parser.parse(
            TestPods.yaml(
                """
                metadata:
                  name: p
                  annotations:
                    hami.io/node-scheduler-policy: spread
                    hami.io/gpu-scheduler-policy: binpack
                    hami.io/device-scoring-weights: slot=1,core=2,memory=3
                spec: {containers: [{name: c}]}
                """));
    assertThat(request.overrides()).isEqualTo(new PolicyOverrides("spread", "binpack", new ScoringWeights(1, 2, 3)));
  }

  @Test
  void reportsInvalidWeightsAndAmounts() {
    assertThatThrownBy(() -> parser.parse(annotated("hami.io/device-scoring-weights", "slot=1")))
        .isInstanceOf(PodRequestException.class)
        .hasMessageContaining("hami.io/device-scoring-weights annotation \"slot=1\"");
    assertThatThrownBy(() -> parser.parse(TestPods.withLimits("nvidia.com/gpumem: 1.5")))
        .hasMessage("container gpu: nvidia.com/gpumem 1.5 is not a non-negative whole number");
    assertThatThrownBy(() -> parser.parse(TestPods.withLimits("nvidia.com/gpu: 4Zi")))
        .hasMessage("container gpu: nvidia.com/gpu '4Zi' is not a valid quantity");
    assertThatThrownBy(() -> parser.parse(TestPods.yaml("spec: {containers: [{name: c}]}"))).hasMessage("pod has no metadata.name");
  }

  @Test
  void usesTheSchemasResourceNames() {
    PodRequestParser custom =
        new PodRequestParser(ResourceSchema.nvidia().withResourceNames("example.com/gpu", "example.com/mem", "example.com/pct", "example.com/cores", "example.com/prio"));
    assertThat(custom.parse(TestPods.withLimits("example.com/gpu: 1, example.com/mem: 10, nvidia.com/gpu: 7")).containers())
        .containsExactly(new ContainerRequest("gpu", 1, 10, UNSET, UNSET));
  }

  private static io.fabric8.kubernetes.api.model.Pod annotated(String key, String value) {
    return TestPods.yaml("metadata: {name: p, annotations: {\"" + key + "\": \"" + value + "\"}}\nspec: {containers: [{name: c}]}\n");
  }

  @Test
  void asksForDevicesReadsOnlyTheContainersCounts() {
    assertThat(parser.asksForDevices(TestPods.withLimits("nvidia.com/gpu: 1"))).isTrue();
    assertThat(parser.asksForDevices(TestPods.withLimits("nvidia.com/gpu: 0, cpu: 1"))).isFalse();
    assertThat(parser.asksForDevices(TestPods.yaml(
        "metadata: {name: p}\nspec: {initContainers: [{name: i, resources: {requests: {nvidia.com/gpu: 1}}}], containers: [{name: c}]}\n"))).isTrue();
    // Annotations, anybody's to write, change nothing.
    assertThat(parser.asksForDevices(TestPods.yaml(
        "metadata: {name: p, annotations: {hami.io/vgpu-devices-allocated: 'GPU-a,NVIDIA,1000,10:;'}}\nspec: {containers: [{name: c}]}\n"))).isFalse();
    assertThatThrownBy(() -> parser.asksForDevices(TestPods.withLimits("nvidia.com/gpu: 0.5")))
        .isInstanceOf(PodRequestException.class)
        .hasMessage("container gpu: nvidia.com/gpu 0.5 is not a non-negative whole number");
  }
}
