package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.vgpu.k8s.pod.PodCpu;
import io.vgpu.k8s.pod.PodRefs;
import org.junit.jupiter.api.Test;

/** What a lean pod keeps (what the scheduler reads) and what it does not hold at all. */
class LeanStoreTest {
  private static Pod full() {
    return new PodBuilder()
        .withNewMetadata().withName("p").withNamespace("ns").withUid("u1").withResourceVersion("7")
          .addToAnnotations("hami.io/vgpu-node", "n1").addToAnnotations("team.example.com/owner", "x".repeat(4096))
          .addToLabels("app", "trainer").addToFinalizers("f").addNewOwnerReference().withName("rs").endOwnerReference().endMetadata()
        .withNewSpec().withNodeName("n1")
          .addNewInitContainer().withName("init").withNewResources().addToRequests("cpu", new Quantity("500m")).endResources().endInitContainer()
          .addNewContainer().withName("main").withImage("img").addToArgs("--a").addNewEnv().withName("E").withValue("v").endEnv()
            .withNewResources().addToRequests("cpu", new Quantity("2")).addToRequests("memory", new Quantity("1Gi")).endResources().endContainer()
          .addNewVolume().withName("data").withNewEmptyDir().endEmptyDir().endVolume()
          .addNewToleration().withKey("k").withOperator("Exists").endToleration().endSpec()
        .withNewStatus().withPhase("Running").withPodIP("10.0.0.1").addNewCondition().withType("Ready").withStatus("True").endCondition()
          .addNewInitContainerStatus().withName("init").withNewState().withNewTerminated().withExitCode(0).endTerminated().endState().endInitContainerStatus()
          .addNewContainerStatus().withName("main").withReady(true).endContainerStatus().endStatus()
        .build();
  }

  @Test
  void aLeanPodKeepsWhatTheSchedulerReads() {
    Pod lean = LeanStore.lean(full());
    assertThat(PodRefs.of(lean)).isEqualTo(PodRefs.of(full()));
    assertThat(lean.getMetadata().getUid()).isEqualTo("u1");
    assertThat(lean.getMetadata().getResourceVersion()).isEqualTo("7");
    assertThat(PodRefs.annotations(lean)).containsExactlyEntriesOf(java.util.Map.of("hami.io/vgpu-node", "n1"));
    assertThat(lean.getSpec().getNodeName()).isEqualTo("n1");
    assertThat(PodRefs.containers(lean)).extracting(c -> c.getName()).containsExactly("init", "main");
    assertThat(PodCpu.requestMilli(lean)).isEqualTo(PodCpu.requestMilli(full()));
    assertThat(lean.getStatus().getPhase()).isEqualTo("Running");
    assertThat(lean.getStatus().getInitContainerStatuses()).singleElement()
        .satisfies(s -> assertThat(s.getState().getTerminated().getExitCode()).isZero());
  }

  @Test
  void aLeanPodHoldsNoCollectionItDoesNotRead() {
    Pod lean = LeanStore.lean(full());
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
    Pod lean = LeanStore.lean(bare);
    assertThat(PodRefs.annotations(lean)).isEmpty();
    assertThat(PodCpu.requestMilli(lean)).isZero();
    assertThat(lean.getStatus()).isNull();
  }
}
