package io.vgpu.k8s.kai;

import static io.vgpu.k8s.kai.KaiFixtures.GPU0;
import static io.vgpu.k8s.kai.KaiFixtures.GPU1;
import static io.vgpu.k8s.kai.KaiFixtures.NODE;
import static io.vgpu.k8s.kai.KaiFixtures.bindRequest;
import static io.vgpu.k8s.kai.KaiFixtures.reservationPod;
import static io.vgpu.k8s.kai.KaiFixtures.sharedPod;
import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The grant of a KAI fraction container, from KAI's BindRequest, reservation pods and the node label. */
class KaiGrantDerivationTest {
  static final String G0 = "0a1b2c3d-0000-4000-8000-000000000000";
  static final String G1 = "9f8e7d6c-0000-4000-8000-000000000001";
  static final Pod POD = sharedPod("shared", "uid-1");
  static final Map<String, Long> A100S = Map.of(GPU0, 40960L, GPU1, 40960L);

  private static KaiGrantDerivation.Outcome derive(GenericKubernetesResource br, List<Pod> reservations, String label, Map<String, Long> cards) {
    return KaiGrantDerivation.derive(POD, br, reservations, label, NODE, cards);
  }

  private static String refusal(KaiGrantDerivation.Outcome outcome) {
    assertThat(outcome).isInstanceOf(KaiGrantDerivation.Refusal.class);
    return ((KaiGrantDerivation.Refusal) outcome).reason();
  }

  /** kai.md §1.3: the label, KAI's portion string for the request, and the MiB KAI's hamicore plugin writes. */
  @ParameterizedTest(name = "{0} MiB label, portion {1} -> {2} MiB")
  @CsvSource({"40960, 0.51, 20889", "15360, 0.27, 4147", "81920, 0.51, 41779", "10000, 0.08, 800", "10000, 0.50, 5000"})
  void kaisRoundingToTheMiB(long label, String portion, long expected) {
    Map<String, Long> cards = Map.of(GPU0, label);
    KaiGrantDerivation.Outcome outcome = derive(bindRequest(POD, portion, 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), Long.toString(label), cards);
    assertThat(outcome).isEqualTo(new KaiGrantDerivation.Grant(List.of(GPU0), List.of(expected), portion, label, ""));
  }

  /** The portion KAI's scheduler writes for a memory request, recomputed as KAI does (floor to 100, ceil to 0.01, "%.2f"). */
  @ParameterizedTest(name = "gpu-memory {1} on a {0} MiB card -> {2}")
  @CsvSource({"40960, 20480, 0.51", "15360, 4096, 0.27", "81920, 40960, 0.51", "10000, 700, 0.08", "10000, 5000, 0.50"})
  void thePortionsOfTheTableAreKaisOwn(long label, long request, String portion) {
    long floored = label - label % 100;
    double p = Math.ceil((double) request / (double) floored * 100) / 100;
    assertThat(String.format(java.util.Locale.ROOT, "%.2f", p)).isEqualTo(portion);
  }

  @Test
  void twoDevicesTwoGroupsTwoCardsInTheBindRequestsOrder() {
    KaiGrantDerivation.Outcome outcome =
        derive(bindRequest(POD, "0.51", 2, List.of(G1, G0)), List.of(reservationPod(G0, NODE, GPU0), reservationPod(G1, NODE, GPU1)), "40960", A100S);
    assertThat(outcome).isEqualTo(new KaiGrantDerivation.Grant(List.of(GPU1, GPU0), List.of(20889L, 20889L), "0.51", 40960, ""));
  }

  @Test
  void aLabelThatDisagreesWithNvmlGivesThePortionOfTheSmallerAndSaysSo() {
    KaiGrantDerivation.Outcome above =
        derive(bindRequest(POD, "0.50", 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), "81920", Map.of(GPU0, 40960L));
    assertThat(above)
        .isEqualTo(
            new KaiGrantDerivation.Grant(
                List.of(GPU0), List.of(20480L), "0.50", 81920,
                "node label nvidia.com/gpu.memory=81920 disagrees with the 40960 MiB NVML reports for " + GPU0 + ": the grant there is a portion of the smaller, 40960 MiB"));
    KaiGrantDerivation.Outcome below =
        derive(bindRequest(POD, "0.51", 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), "40960", Map.of(GPU0, 40990L));
    assertThat(below)
        .isEqualTo(
            new KaiGrantDerivation.Grant(
                List.of(GPU0), List.of(20889L), "0.51", 40960,
                "node label nvidia.com/gpu.memory=40960 disagrees with the 40990 MiB NVML reports for " + GPU0 + ": the grant there is a portion of the smaller, 40960 MiB"));
  }

  @Test
  void noBindRequestYetIsPending() {
    KaiGrantDerivation.Outcome outcome = derive(null, List.of(), "40960", A100S);
    assertThat(outcome).isEqualTo(new KaiGrantDerivation.Refusal("no BindRequest team/shared (scheduling.run.ai/v1alpha2) exists", true));
  }

  @Test
  void aBindRequestNotOwnedByThePodIsRefused() {
    GenericKubernetesResource br = bindRequest(POD, "0.51", 1, List.of(G0));
    br.getMetadata().getOwnerReferences().get(0).setUid("uid-other");
    assertThat(refusal(derive(br, List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S)))
        .isEqualTo("BindRequest team/shared is not owned by pod UID uid-1 (KAI's scheduler creates it owned by the pod)");
    br.getMetadata().setOwnerReferences(List.of());
    assertThat(refusal(derive(br, List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S))).startsWith("BindRequest team/shared is not owned by pod UID uid-1");
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> spec(GenericKubernetesResource br) {
    return (Map<String, Object>) br.getAdditionalProperties().get("spec");
  }

  @Test
  void aBindRequestForAnotherNodeOrNotAFractionIsRefused() {
    GenericKubernetesResource br = bindRequest(POD, "0.51", 1, List.of(G0));
    spec(br).put("selectedNode", "n2");
    assertThat(refusal(derive(br, List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S))).isEqualTo("BindRequest team/shared spec.selectedNode 'n2' is not this node n1");
    br = bindRequest(POD, "0.51", 1, List.of(G0));
    spec(br).put("receivedResourceType", "Regular");
    assertThat(refusal(derive(br, List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S))).isEqualTo("BindRequest team/shared spec.receivedResourceType 'Regular' is not Fraction");
  }

  @ParameterizedTest(name = "portion ''{0}''")
  @CsvSource({"abc", "0", "0.00", "-0.5", "1.5", "NaN", "Infinity", "1e-1", "''"})
  void aMalformedOrEmptyPortionIsRefused(String portion) {
    assertThat(refusal(derive(bindRequest(POD, portion, 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S)))
        .isEqualTo("BindRequest team/shared spec.receivedGPU.portion '" + portion + "' is not a decimal in (0, 1]");
  }

  @Test
  void aCountThatDisagreesWithTheGroupsIsRefused() {
    assertThat(refusal(derive(bindRequest(POD, "0.51", 2, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), "40960", A100S)))
        .isEqualTo("BindRequest team/shared spec.receivedGPU.count '2' does not match its 1 spec.selectedGPUGroups [" + G0 + "]");
    assertThat(refusal(derive(bindRequest(POD, "0.51", 0, List.of()), List.of(), "40960", A100S))).contains("spec.receivedGPU.count '0'");
  }

  @Test
  void aMissingReservationPodIsPendingAndOnlyThoseOnThisNodeInKaisNamespaceCount() {
    Pod elsewhere = reservationPod(G0, "n2", GPU0);
    Pod wrongNamespace = new PodBuilder(reservationPod(G0, NODE, GPU0)).editMetadata().withNamespace("team").endMetadata().build();
    assertThat(derive(bindRequest(POD, "0.51", 1, List.of(G0)), List.of(elsewhere, wrongNamespace), "40960", A100S))
        .isEqualTo(new KaiGrantDerivation.Refusal("no reservation pod of GPU group " + G0 + " (label runai-gpu-group) runs on node n1 in namespace kai-resource-reservation", true));
  }

  @Test
  void aReservationPodThatHasNotReportedItsCardIsPending() {
    assertThat(derive(bindRequest(POD, "0.51", 1, List.of(G0)), List.of(reservationPod(G0, NODE, null)), "40960", A100S))
        .isEqualTo(
            new KaiGrantDerivation.Refusal(
                "reservation pod kai-resource-reservation/gpu-reservation-0a1b2c3d of GPU group " + G0 + " has not reported its card (annotation run.ai/reserve_for_gpu_index)", true));
  }

  @Test
  void aReportedCardThatIsNotThisNodesIsRefused() {
    assertThat(refusal(derive(bindRequest(POD, "0.51", 1, List.of(G0)), List.of(reservationPod(G0, NODE, "GPU-elsewhere")), "40960", A100S)))
        .isEqualTo("reservation pod kai-resource-reservation/gpu-reservation-0a1b2c3d of GPU group " + G0 + " reports card 'GPU-elsewhere', which is not a card of node n1");
  }

  @Test
  void twoGroupsOnOneCardOrOneGroupOnTwoCardsIsRefused() {
    assertThat(refusal(derive(bindRequest(POD, "0.51", 2, List.of(G0, G1)), List.of(reservationPod(G0, NODE, GPU0), reservationPod(G1, NODE, GPU0)), "40960", A100S)))
        .isEqualTo("GPU groups " + G0 + " and " + G1 + " both reserve card " + GPU0);
    Pod second = new PodBuilder(reservationPod(G0, NODE, GPU1)).editMetadata().withName("gpu-reservation-other").endMetadata().build();
    assertThat(refusal(derive(bindRequest(POD, "0.51", 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0), second), "40960", A100S)))
        .contains("report different cards, " + GPU0 + " and " + GPU1);
  }

  @Test
  void aMissingOrNonNumericLabelIsRefused() {
    GenericKubernetesResource br = bindRequest(POD, "0.51", 1, List.of(G0));
    List<Pod> reservations = List.of(reservationPod(G0, NODE, GPU0));
    assertThat(refusal(derive(br, reservations, null, A100S))).isEqualTo("node n1 has no label nvidia.com/gpu.memory");
    assertThat(refusal(derive(br, reservations, "40Gi", A100S))).isEqualTo("node n1 label nvidia.com/gpu.memory='40Gi' is not a positive integer (MiB)");
    assertThat(refusal(derive(br, reservations, "0", A100S))).isEqualTo("node n1 label nvidia.com/gpu.memory='0' is not a positive integer (MiB)");
  }

  @Test
  void aPortionOfSoLittleMemoryThatItTruncatesToNothingIsRefused() {
    assertThat(refusal(derive(bindRequest(POD, "0.01", 1, List.of(G0)), List.of(reservationPod(G0, NODE, GPU0)), "50", Map.of(GPU0, 50L))))
        .isEqualTo("portion 0.01 of 50 MiB on " + GPU0 + " is no memory at all");
  }

  @Test
  void theFractionContainerIsTheOneMountingTheGrantVolumeNotTheAnnotationsChoice() {
    Pod annotated = new PodBuilder(POD).editMetadata().addToAnnotations(KaiKeys.GPU_FRACTION_CONTAINER_NAME, "sidecar").endMetadata().build();
    KaiGrantDerivation.FractionContainer c = KaiGrantDerivation.fractionContainer(annotated);
    assertThat(c).isEqualTo(new KaiGrantDerivation.FractionContainer("main", false, 1, ""));
    assertThat(c.capabilitiesConfigMap("shared-abcdefg-shared-gpu")).isEqualTo("shared-abcdefg-shared-gpu-1");

    Pod init = new PodBuilder(POD).editSpec().addToInitContainers(new ContainerBuilder(POD.getSpec().getContainers().get(1)).withName("setup").build())
        .editContainer(1).withVolumeMounts(List.of()).endContainer().endSpec().build();
    KaiGrantDerivation.FractionContainer i = KaiGrantDerivation.fractionContainer(init);
    assertThat(i).isEqualTo(new KaiGrantDerivation.FractionContainer("setup", true, 0, ""));
    assertThat(i.capabilitiesConfigMap("p")).isEqualTo("p-i0");
  }

  @Test
  void noneOrTwoContainersMountingTheGrantVolumeIsNoFractionContainer() {
    Pod unmutated = new PodBuilder(POD).editSpec().editContainer(1).withVolumeMounts(List.of()).endContainer().endSpec().build();
    assertThat(KaiGrantDerivation.fractionContainer(unmutated).problem())
        .isEqualTo("no container mounts volume vgpu-kai-grant: vgpu's webhook did not mutate the pod at creation");
    Pod two = new PodBuilder(POD).editSpec().editContainer(0)
        .withVolumeMounts(new VolumeMountBuilder().withName(KaiKeys.GRANT_VOLUME).withMountPath("/etc/vgpu").build()).endContainer().endSpec().build();
    assertThat(KaiGrantDerivation.fractionContainer(two).problem()).isEqualTo("2 containers mount volume vgpu-kai-grant, vgpu's webhook mounts it on one");
    assertThat(KaiGrantDerivation.fractionContainer(two).name()).isNull();
  }
}
