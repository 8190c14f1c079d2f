package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodCpu;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.pod.PodRefs;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What a lean pod keeps (what the scheduler reads) and what it does not hold at all. */
class LeanStoreTest {
  private static Pod full() {
    return new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("ns").withUid("u1").withResourceVersion("7")
          .addToAnnotations("hami.io/vgpu-node", "n1").addToAnnotations("team.example.com/owner", "x".repeat(4096))
          .addToAnnotations("hami.io/bind-phase", "allocating").addToAnnotations("hami.io/node-scheduler-policy", "x".repeat(200_000))
          .addToLabels("app", "trainer").addToFinalizers("f").addNewOwnerReference().withName("rs").endOwnerReference().endMetadata()
        .withNewSpec().withNodeName("n1")
          .addNewInitContainer().withName("init").withNewResources().addToRequests("cpu", new Quantity("500m")).endResources().endInitContainer()
          .addNewContainer().withName("main").withImage("img").addToArgs("--a").addNewEnv().withName("E").withValue("v").endEnv()
            .withNewResources().addToRequests("cpu", new Quantity("2")).addToRequests("memory", new Quantity("1Gi"))
              .addToLimits("nvidia.com/gpu", new Quantity("1")).addToLimits("nvidia.com/gpumem", new Quantity("1000")).addToLimits("example.com/fpga", new Quantity("1"))
              .endResources().endContainer()
          .addNewVolume().withName("data").withNewEmptyDir().endEmptyDir().endVolume()
          .addNewToleration().withKey("k").withOperator("Exists").endToleration().endSpec()
        .withNewStatus().withPhase("Running").withPodIP("10.0.0.1").addNewCondition().withType("Ready").withStatus("True").endCondition()
          .addNewInitContainerStatus().withName("init").withNewState().withNewTerminated().withExitCode(0).endTerminated().endState().endInitContainerStatus()
          .addNewContainerStatus().withName("main").withReady(true).endContainerStatus().endStatus()
        .build();
  }

  private static final Set<String> RESOURCES = Set.of("cpu", "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage", "nvidia.com/gpucores");

  private static Pod lean(Pod pod) {
    return LeanStore.lean(pod, RESOURCES, (annotation, length) -> {
      throw new AssertionError("nothing is over its bound here: " + annotation);
    });
  }

  @Test
  void aLeanPodKeepsWhatTheSchedulerReads() {
    Pod lean = lean(full());
    assertThat(PodRefs.of(lean)).isEqualTo(PodRefs.of(full()));
    assertThat(lean.getMetadata().getUid()).isEqualTo("u1");
    assertThat(lean.getMetadata().getResourceVersion()).isEqualTo("7");
    assertThat(PodRefs.annotations(lean)).containsExactlyEntriesOf(java.util.Map.of("hami.io/vgpu-node", "n1"));
    assertThat(lean.getSpec().getNodeName()).isEqualTo("n1");
    assertThat(PodRefs.containers(lean)).extracting(c -> c.getName()).containsExactly("init", "main");
    assertThat(PodCpu.requestMilli(lean)).isEqualTo(PodCpu.requestMilli(full()));
    assertThat(new PodRequestParser(ResourceSchema.nvidia()).asksForDevices(lean)).isTrue();
    assertThat(lean.getSpec().getContainers().get(0).getResources().getLimits()).containsOnlyKeys("nvidia.com/gpu", "nvidia.com/gpumem");
    assertThat(lean.getSpec().getContainers().get(0).getResources().getRequests()).containsOnlyKeys("cpu");
    assertThat(lean.getStatus().getPhase()).isEqualTo("Running");
    assertThat(lean.getStatus().getInitContainerStatuses()).singleElement()
        .satisfies(s -> assertThat(s.getState().getTerminated().getExitCode()).isZero());
  }

  @Test
  void aLeanPodHoldsNoCollectionItDoesNotRead() {
    Pod lean = lean(full());
    assertThat(lean.getAdditionalProperties()).isNull();
    assertThat(lean.getMetadata().getLabels()).isNull();
    assertThat(lean.getMetadata().getFinalizers()).isNull();
    assertThat(lean.getMetadata().getOwnerReferences()).isNull();
    assertThat(lean.getMetadata().getManagedFields()).isNull();
    assertThat(lean.getSpec().getVolumes()).isNull();
    assertThat(lean.getSpec().getTolerations()).isNull();
    assertThat(lean.getSpec().getNodeSelector()).isNull();
    assertThat(lean.getSpec().getContainers().get(0).getArgs()).isNull();
    assertThat(lean.getSpec().getContainers().get(0).getEnv()).isNull();
    assertThat(lean.getStatus().getConditions()).isNull();
    assertThat(lean.getStatus().getContainerStatuses()).isNull();
    assertThat(lean.getStatus().getPodIP()).isNull();
  }

  @Test
  void aPodWithoutAnnotationsOrStatusIsLeanToo() {
    Pod bare = new PodBuilder().withNewMetadata().withName("b").withNamespace("ns").endMetadata().withNewSpec().addNewContainer().withName("c").endContainer().endSpec().build();
    Pod lean = lean(bare);
    assertThat(PodRefs.annotations(lean)).isEmpty();
    assertThat(PodCpu.requestMilli(lean)).isZero();
    assertThat(lean.getStatus()).isNull();
  }

  @Test
  void aKeptAnnotationOverItsBoundIsDroppedAndReported() {
    Pod pod = new PodBuilder().withNewMetadata().withName("big").withNamespace("ns")
          .addToAnnotations(HamiAnnotations.DEVICES_ALLOCATED, "GPU-a,NVIDIA,1000,10:;".repeat(2000))
          .addToAnnotations(HamiAnnotations.ASSIGNED_NODE, "n".repeat(254))
          .addToAnnotations(HamiAnnotations.ASSIGNED_TIME, "1764496800").endMetadata()
        .withNewSpec().addNewContainer().withName("c").endContainer().endSpec().build();
    Map<String, Integer> reported = new HashMap<>();
    Pod lean = LeanStore.lean(pod, RESOURCES, reported::put);
    assertThat(reported).containsExactlyInAnyOrderEntriesOf(Map.of(HamiAnnotations.ASSIGNED_NODE, 254, HamiAnnotations.DEVICES_ALLOCATED, 44000));
    assertThat(PodRefs.annotations(lean))
        .containsEntry(HamiAnnotations.DEVICES_ALLOCATED, LeanStore.DROPPED)
        .containsEntry(HamiAnnotations.ASSIGNED_NODE, LeanStore.DROPPED)
        .containsEntry(HamiAnnotations.ASSIGNED_TIME, "1764496800");
    assertThat(LeanStore.dropped(PodRefs.annotations(lean).get(HamiAnnotations.DEVICES_ALLOCATED))).isTrue();
    // The longest device list the scheduler can write for a pod is kept.
    String longest = ("GPU-12345678-1234-1234-1234-123456789012,NVIDIA,40960,100:".repeat(8) + ";").repeat(64);
    assertThat(longest.length()).isLessThanOrEqualTo(LeanStore.MAX_DEVICE_LIST);
    pod.getMetadata().getAnnotations().put(HamiAnnotations.DEVICES_ALLOCATED, longest);
    assertThat(PodRefs.annotations(LeanStore.lean(pod, RESOURCES, (a, l) -> {})).get(HamiAnnotations.DEVICES_ALLOCATED)).isEqualTo(longest);
  }
}
