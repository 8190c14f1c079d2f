package io.vgpu.examples.lab.kubelet;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which program plays an image: a name matches itself with any tag or digest, and nothing longer. */
class LabPodRunnerTest {
  @Test
  void anImageNameMatchesAnyTagOrDigestOfIt() {
    assertThat(LabPodRunner.isImage("ghcr.io/nvidia/kai-scheduler/resource-reservation", "ghcr.io/nvidia/kai-scheduler/resource-reservation")).isTrue();
    assertThat(LabPodRunner.isImage("ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.17.0", "ghcr.io/nvidia/kai-scheduler/resource-reservation")).isTrue();
    assertThat(LabPodRunner.isImage("ghcr.io/nvidia/kai-scheduler/resource-reservation@sha256:ab", "ghcr.io/nvidia/kai-scheduler/resource-reservation")).isTrue();
    assertThat(LabPodRunner.isImage("ghcr.io/nvidia/kai-scheduler/resource-reservation-x", "ghcr.io/nvidia/kai-scheduler/resource-reservation")).isFalse();
    assertThat(LabPodRunner.isImage(null, "vgpu-lab/probe")).isFalse();
    assertThat(LabPodRunner.isProbe("vgpu-lab/probe:1")).isTrue();
  }
}
