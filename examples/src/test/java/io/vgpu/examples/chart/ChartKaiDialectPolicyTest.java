package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cel.common.types.SimpleType;
import io.vgpu.examples.chart.AdmissionPolicies.Denial;
import io.vgpu.examples.chart.AdmissionPolicies.Write;
import io.vgpu.examples.chart.RenderedChart.Document;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * With vgpu.kaiDialect the policy hami-kai-dialect fixes the KAI keys vgpu's extender reads on a pod of
 * vgpu's scheduler once it exists (its queue label, pod-group-name, the portion annotations), and leaves
 * the GPU group labels to vgpu's scheduler, which writes them at bind.
 */
class ChartKaiDialectPolicyTest {
  private static final String TENANT = "alice";
  private static final String SCHEDULER = "system:serviceaccount:kube-system:hami-scheduler";
  private static final RenderedChart CHART = RenderedChart.kaiDialect();
  private static final AdmissionPolicies POLICIES = new AdmissionPolicies(CHART.all("ValidatingAdmissionPolicy").stream().map(Document::tree).toList());

  private static Map<String, Object> pod(String scheduler, Map<String, String> labels, Map<String, String> annotations) {
    Map<String, Object> metadata = new LinkedHashMap<>();
    metadata.put("name", "p");
    metadata.put("namespace", "team-a");
    metadata.put("labels", labels);
    metadata.put("annotations", annotations);
    return Map.of("apiVersion", "v1", "kind", "Pod", "metadata", metadata, "spec", Map.of("schedulerName", scheduler, "containers", List.of(Map.of("name", "c"))));
  }

  private static Optional<Denial> update(String user, Map<String, Object> before, Map<String, Object> after) {
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("operation", "UPDATE");
    request.put("name", "p");
    request.put("namespace", "team-a");
    request.put("userInfo", Map.of("username", user, "groups", List.of("system:authenticated")));
    return POLICIES.admit(new Write("pods", "", after, before, request));
  }

  @Test
  void thePolicyCompilesAsKubeApiserverCompilesIt() {
    JsonNode policy = CHART.get("ValidatingAdmissionPolicy", "hami-kai-dialect");
    assertThat(AdmissionPolicies.typeCheck(policy, SimpleType.DYN)).isEmpty();
    assertThat(AdmissionPolicies.typeCheck(policy, AdmissionPolicies.KINDS.get("pods"))).isEmpty();
    assertThat(policy.path("spec").path("failurePolicy").asString()).isEqualTo("Fail");
  }

  @Test
  void aTenantCannotMoveItsPodToAnotherQueueGangOrPortion() {
    Map<String, String> queue = Map.of("kai.scheduler/queue", "research");
    Map<String, Object> created = pod("hami-scheduler", queue, Map.of("gpu-fraction", "0.2", "pod-group-name", "pg"));
    assertThat(update(TENANT, created, pod("hami-scheduler", Map.of("kai.scheduler/queue", "unlimited"), Map.of("gpu-fraction", "0.2", "pod-group-name", "pg"))))
        .get().extracting(Denial::message)
        .isEqualTo("label kai.scheduler/queue of pod team-a/p is fixed at the pod's creation (its queue is charged for it): alice may not add, change or remove it");
    assertThat(update(TENANT, created, pod("hami-scheduler", queue, Map.of("gpu-fraction", "0.9", "pod-group-name", "pg"))))
        .get().extracting(Denial::message)
        .isEqualTo("annotation gpu-fraction of pod team-a/p is fixed at the pod's creation (vgpu schedules it by KAI's keys): alice may not add, change or remove it");
    assertThat(update(TENANT, created, pod("hami-scheduler", queue, Map.of("gpu-fraction", "0.2")))).as("leave the gang").isPresent();
    assertThat(update(TENANT, created, pod("hami-scheduler", queue, Map.of("gpu-fraction", "0.2", "pod-group-name", "pg", "gpu-memory", "1")))).as("add").isPresent();
    // A whole-card HAMi pod cannot become a fraction either.
    assertThat(update(TENANT, pod("hami-scheduler", Map.of(), Map.of()), pod("hami-scheduler", Map.of(), Map.of("gpu-memory", "1024"))))
        .get().extracting(Denial::policy).isEqualTo("hami-kai-dialect");
    // Other annotations and labels stay the tenant's.
    assertThat(update(TENANT, created, pod("hami-scheduler", Map.of("kai.scheduler/queue", "research", "app", "x"), Map.of("gpu-fraction", "0.2", "pod-group-name", "pg", "note", "y"))))
        .isEmpty();
  }

  @Test
  void onlyVgpusSchedulerWritesTheGpuGroupLabels() {
    Map<String, Object> before = pod("hami-scheduler", Map.of("kai.scheduler/queue", "q"), Map.of("gpu-memory", "1024"));
    Map<String, Object> grouped = pod("hami-scheduler", Map.of("kai.scheduler/queue", "q", "runai-gpu-group", "GPU-1"), Map.of("gpu-memory", "1024"));
    assertThat(update(SCHEDULER, before, grouped)).isEmpty();
    assertThat(update(TENANT, before, grouped)).get().extracting(Denial::message)
        .isEqualTo("the GPU group labels of pod team-a/p are written only by vgpu's scheduler: alice may not add, change or remove them");
    assertThat(update(TENANT, grouped, before)).as("remove").isPresent();
    assertThat(update(TENANT, before, pod("hami-scheduler", Map.of("kai.scheduler/queue", "q", "runai-gpu-group/GPU-2", "GPU-2"), Map.of("gpu-memory", "1024")))).as("a device label").isPresent();
    assertThat(update(TENANT, grouped, grouped)).isEmpty();
  }

  @Test
  void podsOfOtherSchedulersAreNotVgpusToFix() {
    assertThat(update(TENANT, pod("kai-scheduler", Map.of("kai.scheduler/queue", "a"), Map.of()), pod("kai-scheduler", Map.of("kai.scheduler/queue", "b"), Map.of()))).isEmpty();
  }
}
