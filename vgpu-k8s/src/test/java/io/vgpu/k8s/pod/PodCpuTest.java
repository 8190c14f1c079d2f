package io.vgpu.k8s.pod;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.TestPods;
import org.junit.jupiter.api.Test;

/** A pod's CPU request as kube-scheduler counts it, read into the request the engine's policies see. */
class PodCpuTest {
  @Test
  void sumsTheAppContainersRequestsFallingBackToLimitsAndRoundingMillicoresUp() {
    assertThat(PodCpu.requestMilli(TestPods.yaml(
        """
        metadata: {name: p}
        spec:
          containers:
          - name: a
            resources: {requests: {cpu: 500m}, limits: {cpu: "4"}}
          - name: b
            resources: {limits: {cpu: "1.5"}}
          - name: c
            resources: {requests: {cpu: 0.0001}}
          - name: none
        """))).isEqualTo(500 + 1500 + 1);
  }

  @Test
  void takesTheLargestInitContainerWhenItIsMoreWithSidecarsCountedAsKubernetesDoes() {
    // Init containers run one at a time, each beside the sidecars started before it; the sidecars then
    // run beside the app containers.
    assertThat(PodCpu.requestMilli(TestPods.yaml(
        """
        metadata: {name: p}
        spec:
          initContainers:
          - {name: sidecar, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
          - {name: migrate, resources: {requests: {cpu: "6"}}}
          containers:
          - {name: app, resources: {requests: {cpu: "2"}}}
          overhead: {cpu: 250m}
        """))).isEqualTo(7_000 + 250);
    assertThat(PodCpu.requestMilli(TestPods.yaml(
        """
        metadata: {name: p}
        spec:
          initContainers:
          - {name: sidecar, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
          - {name: setup, resources: {requests: {cpu: "2"}}}
          containers:
          - {name: app, resources: {requests: {cpu: "4"}}}
        """))).isEqualTo(5_000);
  }

  @Test
  void theParsedRequestCarriesIt() {
    PodRequestParser parser = new PodRequestParser(ResourceSchema.nvidia());
    assertThat(parser.parse(TestPods.withLimits("nvidia.com/gpu: 1, cpu: 500m")).cpuMilli()).isEqualTo(500);
    assertThat(parser.parse(TestPods.withLimits("nvidia.com/gpu: 1")).cpuMilli()).isZero();
  }

  @Test
  void aBadOrNegativeCpuIsOneLineNamingTheContainerAndValue() {
    assertThatThrownBy(() -> PodCpu.requestMilli(TestPods.withLimits("cpu: lots")))
        .isInstanceOf(PodRequestException.class)
        .hasMessage("container gpu: cpu 'lots' is not a valid quantity");
    assertThatThrownBy(() -> PodCpu.requestMilli(TestPods.withLimits("cpu: -2")))
        .isInstanceOf(PodRequestException.class)
        .hasMessage("container gpu: cpu -2 is negative");
    assertThatThrownBy(() -> PodCpu.requestMilli(TestPods.withLimits("cpu: '1e30'")))
        .isInstanceOf(PodRequestException.class)
        .hasMessage("container gpu: cpu 1e30 is too large");
  }
}
