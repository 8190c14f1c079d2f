package io.vgpu.k8s.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.TestPods;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.pod.ContainerResources;
import io.vgpu.k8s.pod.PodJson;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class AdmissionMutatorTest {
  private static final Function<String, QuotaUsage> NO_QUOTA = ns -> new QuotaUsage(ns, QuotaLimits.NONE, 0, 0);
  private final AdmissionMutator mutator = new AdmissionMutator(DeviceConfig.DEFAULT, "hami-scheduler");

  private static Map<String, String> limits(Container c) {
    return ContainerResources.limits(c).entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().toString()));
  }

  private static Container first(AdmissionResult r) {
    return r.admittedPod().getSpec().getContainers().get(0);
  }

  private AdmissionResult admit(String limits) {
    return mutator.admit(TestPods.withLimits(limits), NO_QUOTA);
  }

  @Test
  void aBareCountBecomesAnExclusiveCardAndTheGoldenPatchSaysSo() {
    AdmissionResult r = admit("nvidia.com/gpu: 1");
    assertThat(r.allowed()).isTrue();
    assertThat(r.requestsDevices()).isTrue();
    assertThat(limits(first(r))).containsEntry("nvidia.com/gpucores", "100");
    assertThat(r.admittedPod().getSpec().getSchedulerName()).isEqualTo("hami-scheduler");
    assertThat(r.patch().toString())
        .isEqualTo(
            "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpucores\",\"value\":\"100\"},"
                + "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void memoryOrCoresWithoutACountGetOneCard() {
    assertThat(limits(first(admit("nvidia.com/gpumem: 4096"))))
        .containsEntry("nvidia.com/gpu", "1")
        .doesNotContainKey("nvidia.com/gpucores");
    assertThat(limits(first(admit("nvidia.com/gpucores: 30")))).containsEntry("nvidia.com/gpu", "1").containsEntry("nvidia.com/gpucores", "30");
    assertThat(limits(first(admit("nvidia.com/gpumem-percentage: 50"))))
        .containsEntry("nvidia.com/gpu", "1")
        .doesNotContainKey("nvidia.com/gpucores");
  }

  @Test
  void aHundredPercentOfMemoryIsExclusiveButLessIsNot() {
    assertThat(limits(first(admit("nvidia.com/gpumem-percentage: 100")))).containsEntry("nvidia.com/gpucores", "100");
    assertThat(limits(first(admit("nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 25")))).doesNotContainKey("nvidia.com/gpucores");
    assertThat(limits(first(admit("nvidia.com/gpu: 1, nvidia.com/gpumem: 1024")))).doesNotContainKey("nvidia.com/gpucores");
    assertThat(limits(first(admit("nvidia.com/gpu: 1, nvidia.com/gpucores: 20")))).containsEntry("nvidia.com/gpucores", "20");
  }

  @Test
  void aCountInRequestsOnlyStillGetsExclusiveCoresInLimits() {
    Pod pod = TestPods.yaml("metadata: {name: p}\nspec: {containers: [{name: gpu, resources: {requests: {nvidia.com/gpu: 1}}}]}\n");
    AdmissionResult r = mutator.admit(pod, NO_QUOTA);
    assertThat(limits(first(r))).containsExactly(Map.entry("nvidia.com/gpucores", "100"));
  }

  @Test
  void leavesTheSubmittedPodUntouched() {
    Pod pod = TestPods.withLimits("nvidia.com/gpu: 1");
    String before = PodJson.toTree(pod).toString();
    mutator.admit(pod, NO_QUOTA);
    assertThat(PodJson.toTree(pod)).hasToString(before);
  }

  @Test
  void addsEnvForPriorityAndCorePolicyAndTheRuntimeClass() {
    AdmissionMutator configured =
        new AdmissionMutator(DeviceConfig.builder().gpuCorePolicy("force").runtimeClassName("nvidia").build(), "hami-scheduler");
    AdmissionResult r = configured.admit(TestPods.withLimits("nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/priority: 0"), NO_QUOTA);
    assertThat(first(r).getEnv())
        .extracting(EnvVar::getName, EnvVar::getValue)
        .containsExactly(
            tuple("CUDA_TASK_PRIORITY", "0"),
            tuple("GPU_CORE_UTILIZATION_POLICY", "force"));
    assertThat(r.admittedPod().getSpec().getRuntimeClassName()).isEqualTo("nvidia");
    assertThat(r.patch().toString())
        .isEqualTo(
            "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"CUDA_TASK_PRIORITY\",\"value\":\"0\"},"
                + "{\"name\":\"GPU_CORE_UTILIZATION_POLICY\",\"value\":\"force\"}]},"
                + "{\"op\":\"add\",\"path\":\"/spec/runtimeClassName\",\"value\":\"nvidia\"},"
                + "{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"hami-scheduler\"}]");
  }

  @Test
  void keepsARuntimeClassThePodChose() {
    AdmissionMutator configured = new AdmissionMutator(DeviceConfig.builder().runtimeClassName("nvidia").build(), "hami-scheduler");
    Pod pod = TestPods.yaml("metadata: {name: p}\nspec: {runtimeClassName: kata, containers: [{name: g, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    assertThat(configured.admit(pod, NO_QUOTA).admittedPod().getSpec().getRuntimeClassName()).isEqualTo("kata");
  }

  @Test
  void overwriteEnvHidesGpusFromContainersWithoutThem() {
    AdmissionMutator configured = new AdmissionMutator(DeviceConfig.builder().overwriteEnv(true).build(), "hami-scheduler");
    AdmissionResult r = configured.admit(TestPods.yaml("metadata: {name: p}\nspec: {containers: [{name: cpu}]}\n"), NO_QUOTA);
    assertThat(r.requestsDevices()).isFalse();
    assertThat(first(r).getEnv()).containsExactly(new EnvVar("NVIDIA_VISIBLE_DEVICES", "none", null));
    assertThat(r.admittedPod().getSpec().getSchedulerName()).isNull();
  }

  @Test
  void handsPodsWithoutGpusOverOnlyWhenCpuOnlyPlacementIsOn() {
    Pod cpuOnly = TestPods.yaml("metadata: {name: p}\nspec: {containers: [{name: cpu, resources: {requests: {cpu: 2}}}]}\n");
    assertThat(mutator.admit(cpuOnly, NO_QUOTA).patch()).isEmpty();
    AdmissionMutator placing = new AdmissionMutator(DeviceConfig.DEFAULT, "vgpu-scheduler", true, true);
    AdmissionResult r = placing.admit(cpuOnly, NO_QUOTA);
    assertThat(r.allowed()).isTrue();
    assertThat(r.requestsDevices()).isFalse();
    assertThat(r.patch().toString()).isEqualTo("[{\"op\":\"add\",\"path\":\"/spec/schedulerName\",\"value\":\"vgpu-scheduler\"}]");
    // default-scheduler is handed over as for GPU pods; another scheduler's pod and a pod already on a node are left alone.
    Pod named = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: default-scheduler, containers: [{name: cpu}]}\n");
    assertThat(placing.admit(named, NO_QUOTA).admittedPod().getSpec().getSchedulerName()).isEqualTo("vgpu-scheduler");
    Pod volcano = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: volcano, containers: [{name: cpu}]}\n");
    assertThat(placing.admit(volcano, NO_QUOTA).patch()).isEmpty();
    Pod onNode = TestPods.yaml("metadata: {name: p}\nspec: {nodeName: n1, containers: [{name: cpu}]}\n");
    AdmissionResult bound = placing.admit(onNode, NO_QUOTA);
    assertThat(bound.allowed()).isTrue();
    assertThat(bound.patch()).isEmpty();
  }

  @Test
  void leavesPodsOfOtherSchedulersAlone() {
    Pod pod = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: volcano, containers: [{name: g, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    AdmissionResult r = mutator.admit(pod, NO_QUOTA);
    assertThat(r.allowed()).isTrue();
    assertThat(r.message()).isEqualTo("pod already has different scheduler assigned");
    assertThat(r.patch()).isEmpty();
  }

  @Test
  void deniesWhatHamiDenies() {
    assertThat(mutator.admit(TestPods.yaml("metadata: {name: p}\nspec: {containers: []}\n"), NO_QUOTA).message()).isEqualTo("pod has no containers");
    Pod privileged =
        TestPods.yaml("metadata: {name: p}\nspec: {containers: [{name: g, securityContext: {privileged: true}, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    assertThat(mutator.admit(privileged, NO_QUOTA).message()).isEqualTo("container g is privileged");
    Pod privilegedCpu = TestPods.yaml("metadata: {name: p}\nspec: {containers: [{name: g, securityContext: {privileged: true}}]}\n");
    assertThat(mutator.admit(privilegedCpu, NO_QUOTA).allowed()).isTrue();
    assertThat(admit("nvidia.com/gpumem-percentage: 101").message())
        .isEqualTo("invalid nvidia.com/gpumem-percentage value 101 in container gpu: must be an integer between 0 and 100");
    assertThat(admit("nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 0").allowed()).isTrue();
    Pod bound = TestPods.yaml("metadata: {name: p}\nspec: {nodeName: worker1, containers: [{name: g, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    assertThat(mutator.admit(bound, NO_QUOTA).message()).isEqualTo("pod has node assigned (spec.nodeName: worker1)");
  }

  @Test
  void aGpuPodNamingAnotherSchedulerIsDeniedANodeOrPrivilegeAllTheSame() {
    Pod bound = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: volcano, nodeName: worker1, containers: [{name: g, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    AdmissionResult onNode = mutator.admit(bound, NO_QUOTA);
    assertThat(onNode.allowed()).isFalse();
    assertThat(onNode.message()).isEqualTo("pod has node assigned (spec.nodeName: worker1)");
    Pod privileged = TestPods.yaml(
        "metadata: {name: p}\nspec: {schedulerName: volcano, initContainers: [{name: setup, securityContext: {privileged: true}}],"
            + " containers: [{name: g, resources: {requests: {nvidia.com/gpumem: 1000}}}]}\n");
    assertThat(mutator.admit(privileged, NO_QUOTA).message()).isEqualTo("container setup is privileged");
    // Even the default scheduler, when the scheduler does not take its pods over.
    AdmissionMutator keepingDefault = new AdmissionMutator(DeviceConfig.DEFAULT, "hami-scheduler", false);
    Pod defaultBound = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: default-scheduler, nodeName: worker1, containers: [{name: g, resources: {limits: {nvidia.com/gpucores: 10}}}]}\n");
    assertThat(keepingDefault.admit(defaultBound, NO_QUOTA).message()).isEqualTo("pod has node assigned (spec.nodeName: worker1)");
  }

  @Test
  void podsWithoutVgpuResourcesKeepTheirNodeAndPrivilegeWhateverSchedulerTheyName() {
    for (String scheduler : new String[] {"volcano", "kai-scheduler", "default-scheduler", "hami-scheduler"}) {
      Pod pod = TestPods.yaml("metadata: {name: p}\nspec: {schedulerName: " + scheduler + ", nodeName: worker1,"
          + " containers: [{name: c, securityContext: {privileged: true}, resources: {limits: {cpu: 1}}}]}\n");
      AdmissionResult r = mutator.admit(pod, NO_QUOTA);
      assertThat(r.allowed()).as(scheduler).isTrue();
      assertThat(r.patch()).as(scheduler).isEmpty();
    }
    // Where the vGPU resources have other names (whole cards served as nvidia.com/gpu, as under KAI),
    // a whole-card pod on a node is not a vGPU pod.
    AdmissionMutator underKai = new AdmissionMutator(DeviceConfig.builder().resourceCountName("nvidia.com/vgpu").build(), "hami-scheduler");
    Pod reservation = TestPods.yaml("metadata: {name: gpu-reservation-1, namespace: kai-resource-reservation}\n"
        + "spec: {schedulerName: kai-scheduler, nodeName: worker1, containers: [{name: resource-reservation, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
    assertThat(underKai.admit(reservation, NO_QUOTA).allowed()).isTrue();
  }

  @Test
  void deniesMalformedGpuQuantitiesThatHamiWouldSilentlyDrop() {
    AdmissionResult negative = admit("nvidia.com/gpu: 1, nvidia.com/gpumem: -5");
    assertThat(negative.allowed()).isFalse();
    assertThat(negative.message()).isEqualTo("container gpu: nvidia.com/gpumem -5 is negative");
    assertThat(admit("nvidia.com/gpu: 0.5").message()).isEqualTo("container gpu: nvidia.com/gpu 0.5 is not a whole number");
    assertThat(admit("nvidia.com/gpu: 1, nvidia.com/gpumem: 4Zi").message())
        .isEqualTo("container gpu: nvidia.com/gpumem '4Zi' is not a valid quantity");
    assertThat(admit("nvidia.com/gpu: 1, nvidia.com/gpumem: 3000000000").message())
        .isEqualTo("container gpu: nvidia.com/gpumem 3000000000 exceeds 2147483647");
    assertThat(admit("nvidia.com/gpu: 1, nvidia.com/gpucores: 101").allowed()).as("cores above 100 are clamped at fit").isTrue();
    assertThat(admit("cpu: 500m, nvidia.com/gpu: 1").allowed()).isTrue();
  }

  @Test
  void checksTheNamespaceQuotaOnRequestedMibAndCoresTimesCount() {
    Function<String, QuotaUsage> quota = ns -> new QuotaUsage(ns, new QuotaLimits(20000, 200), 4096, 25);
    AdmissionResult over = mutator.admit(TestPods.withLimits("nvidia.com/gpu: 2, nvidia.com/gpumem: 8000, nvidia.com/gpucores: 10"), quota);
    assertThat(over.allowed()).isFalse();
    assertThat(over.message())
        .isEqualTo("exceeding resource quota: namespace default requests 16000 MiB of limits.nvidia.com/gpumem (used 4096, limit 20000)");
    AdmissionResult cores = mutator.admit(TestPods.withLimits("nvidia.com/gpu: 2, nvidia.com/gpumem: 10, nvidia.com/gpucores: 90"), quota);
    assertThat(cores.message()).isEqualTo("exceeding resource quota: namespace default requests 180 of limits.nvidia.com/gpucores (used 25, limit 200)");
    AdmissionResult percentage = mutator.admit(TestPods.withLimits("nvidia.com/gpu: 1, nvidia.com/gpumem-percentage: 90, nvidia.com/gpucores: 1"), quota);
    assertThat(percentage.allowed()).as("a percentage counts 0 MiB at admission").isTrue();
  }

  @Test
  void countsInitContainersAsTheirPeakAndAppliesTheMemoryFactor() {
    Function<String, QuotaUsage> quota = ns -> new QuotaUsage(ns, new QuotaLimits(5000, QuotaLimits.UNLIMITED), 0, 0);
    Pod pod =
        TestPods.yaml(
            """
            metadata: {name: p}
            spec:
              initContainers:
              - {name: i1, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}}}
              - {name: i2, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 3000}}}
              containers:
              - {name: a, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 2000}}}
              - {name: b, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 2000}}}
            """);
    assertThat(mutator.admit(pod, quota).allowed()).as("peak 3000 vs app sum 4000, under 5000").isTrue();
    AdmissionMutator doubled = new AdmissionMutator(DeviceConfig.builder().memoryFactor(2).build(), "hami-scheduler");
    assertThat(doubled.admit(pod, quota).allowed()).as("8000 MiB against 5000 x 2").isTrue();
    Function<String, QuotaUsage> tight = ns -> new QuotaUsage(ns, new QuotaLimits(3000, QuotaLimits.UNLIMITED), 0, 0);
    assertThat(doubled.admit(pod, tight).message()).contains("requests 8000 MiB").contains("limit 6000");
  }
}
