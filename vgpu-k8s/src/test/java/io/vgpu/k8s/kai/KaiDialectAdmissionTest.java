package io.vgpu.k8s.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.PodJson;
import org.junit.jupiter.api.Test;

/** Golden JSON patches of vgpu's webhook for KAI's pod dialect when vgpu schedules it ({@code --kai-dialect}). */
class KaiDialectAdmissionTest {
  private final AdmissionMutator hami = new AdmissionMutator(DeviceConfig.DEFAULT, "hami-scheduler");
  private final KaiDialectAdmission dialect = new KaiDialectAdmission("kai-scheduler", "hami-scheduler", DeviceConfig.DEFAULT);

  private static Pod pod(String json) {
    return PodJson.fromTree(PodJson.mapper().readTree(json.replace('\'', '"')));
  }

  private AdmissionResult admit(String json) {
    Pod submitted = pod(json);
    String before = PodJson.toTree(submitted).toString();
    AdmissionResult r = dialect.admit(submitted, p -> hami.admit(p, ns -> new QuotaUsage(ns, QuotaLimits.NONE, 0, 0)));
    assertThat(PodJson.toTree(submitted)).as("the submitted pod is not modified").hasToString(before);
    return r;
  }

  @Test
  void aFractionPodAsksForItsCardsOnItsFractionContainerWithoutCoresAndNamesVgpusScheduler() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'app','image':'cuda'}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.requestsDevices()).isTrue();
    assertThat(r.patch().toString()).isEqualTo(
        "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"kai.scheduler/queue\":\"default-queue\"}},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/resources\",\"value\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"0\"}}},"
            + "{\"op\":\"replace\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
    assertThat(r.admittedPod().getMetadata().getAnnotations()).containsEntry("gpu-fraction", "0.5");
  }

  @Test
  void aMemoryPodOnTwoDevicesAsksForTwoCardsOnTheContainerItNamesAndKeepsItsQueue() {
    AdmissionResult r = admit("{'metadata':{'name':'p','labels':{'kai.scheduler/queue':'research','runai-gpu-group':'forged'},"
        + "'annotations':{'gpu-memory':'20480','gpu-fraction-num-devices':'2','gpu-fraction-container-name':'train'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'sidecar','image':'x'},"
        + "{'name':'train','image':'cuda','resources':{'limits':{'cpu':'1'}}}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.patch().toString()).isEqualTo(
        "[{\"op\":\"remove\",\"path\":\"/metadata/labels/runai-gpu-group\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/1/resources/limits/nvidia.com~1gpu\",\"value\":\"2\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/1/resources/limits/nvidia.com~1gpucores\",\"value\":\"0\"},"
            + "{\"op\":\"replace\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void aWholeCardPodKeepsItsCountAndAsksForNoCoresForKaiGivesCardsNotComputeShares() {
    AdmissionResult r = admit("{'metadata':{'name':'p','labels':{'kai.scheduler/queue':'research'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'app','resources':{'limits':{'nvidia.com/gpu':'2'}}}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.patch().toString()).isEqualTo(
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\",\"value\":\"0\"},"
            + "{\"op\":\"replace\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void whatKaisAdmissionDeniesIsDeniedWithKaisMessage() {
    assertThat(admit("{'metadata':{'name':'p','annotations':{'gpu-memory':'8000Mi'}},'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c'}]}}").message())
        .isEqualTo("gpu-memory annotation value must be a positive integer greater than 0");
    assertThat(admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}").message())
        .isEqualTo("cannot have both GPU fraction request and whole GPU resource request/limit");
    assertThat(admit("{'metadata':{'name':'p','annotations':{'gpu-fraction-num-devices':'2'}},'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c'}]}}").message())
        .isEqualTo("cannot request multiple fractional devices without specifying fraction portion or gpu-memory");
    AdmissionResult unnamed = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5','gpu-fraction-container-name':'nope'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c'}]}}");
    assertThat(unnamed.allowed()).isFalse();
    assertThat(unnamed.message()).isEqualTo("pod annotation gpu-fraction-container-name: 'nope' names no init container or container of the pod");
  }

  @Test
  void aKaiPodAskingForVgpusOwnShareResourcesIsDeniedInOneLine() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-memory':'1024'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpumem':'2048'}}}]}}");
    assertThat(r.allowed()).isFalse();
    assertThat(r.message()).isEqualTo("pod in KAI's dialect (schedulerName kai-scheduler): container c asks for nvidia.com/gpumem, which KAI does not know;"
        + " ask for a share of a card with the annotation gpu-memory or gpu-fraction");
  }

  @Test
  void theHamiDecisionStillAppliesAfterTheTurn() {
    // A forged grant is removed, and a privileged fraction container is denied as any vGPU container.
    AdmissionResult forged = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.2','hami.io/vgpu-devices-allocated':'GPU-x,NVIDIA,40960,100:;'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c'}]}}");
    assertThat(forged.allowed()).isTrue();
    assertThat(forged.removed()).containsExactly("annotation hami.io/vgpu-devices-allocated");
    assertThat(forged.patch().toString()).startsWith("[{\"op\":\"remove\",\"path\":\"/metadata/annotations/hami.io~1vgpu-devices-allocated\"}");
    AdmissionResult privileged = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.2'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'c','securityContext':{'privileged':true}}]}}");
    assertThat(privileged.allowed()).isFalse();
    assertThat(privileged.message()).isEqualTo("container c is privileged");
  }

  @Test
  void podsOfOtherSchedulersGoToTheHamiDecisionUnchanged() {
    AdmissionResult other = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5'}},'spec':{'schedulerName':'volcano','containers':[{'name':'c'}]}}");
    assertThat(other.allowed()).isTrue();
    assertThat(other.patch()).isEmpty();
    AdmissionResult hamiPod = admit("{'metadata':{'name':'p'},'spec':{'containers':[{'name':'c','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}");
    assertThat(hamiPod.admittedPod().getMetadata().getLabels()).isNullOrEmpty();
    assertThat(hamiPod.admittedPod().getSpec().getSchedulerName()).isEqualTo("hami-scheduler");
  }
}
