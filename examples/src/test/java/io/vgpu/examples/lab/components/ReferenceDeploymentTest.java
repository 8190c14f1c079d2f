package io.vgpu.examples.lab.components;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerConfig;
import io.vgpu.k8s.simulate.NodeAgentSelector;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/** The lab runs what the reference deployment says, changing only the flags that name places. */
class ReferenceDeploymentTest {
  private static final ReferenceDeployment DEPLOYMENT = ReferenceDeployment.read(Path.of("deploy"));

  @Test
  void placeFlagsAreReplacedOrAddedAndEverythingElseStays() {
    Map<String, String> places = new LinkedHashMap<>();
    places.put("--http_bind", "127.0.0.1:1234");
    places.put("--kubeconfig", "/lab/kubeconfig");
    assertThat(ReferenceDeployment.withPlaces(List.of("scheduler", "--http_bind=0.0.0.0:443", "--leader-elect", "--scheduler-name", "hami"), places))
        .containsExactly("scheduler", "--http_bind=127.0.0.1:1234", "--leader-elect", "--scheduler-name", "hami", "--kubeconfig=/lab/kubeconfig");
    assertThat(ReferenceDeployment.withPlaces(List.of("scheduler", "--http_bind", "0.0.0.0:443", "--x"), Map.of("--http_bind", "127.0.0.1:1")))
        .containsExactly("scheduler", "--http_bind=127.0.0.1:1", "--x");
  }

  @Test
  void readsTheManifestsTheLabRuns() {
    assertThat(DEPLOYMENT.scheduler().args()).first().isEqualTo("scheduler");
    assertThat(DEPLOYMENT.scheduler().fieldEnv()).containsEntry("POD_NAME", "metadata.name");
    assertThat(DEPLOYMENT.devicePlugin().args()).first().isEqualTo("device-plugin");
    // vgpu simulate warns of GPU nodes without these labels, judging by the chart's default
    assertThat(DEPLOYMENT.devicePlugin().nodeSelector()).isEqualTo(NodeAgentSelector.CHART_DEFAULT);
    KubeSchedulerConfig config = KubeSchedulerConfig.of(DEPLOYMENT.schedulerConfiguration());
    assertThat(config.schedulerNames()).containsExactly("hami-scheduler");
    assertThat(config.extender().nodeCacheCapable()).isTrue();
    assertThat(config.extender().managedResources()).contains("nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores");
    assertThat(config.extender().timeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.leaseName()).isEqualTo("hami-scheduler");
    assertThat(config.extender().certFile()).isEqualTo("/client-tls/tls.crt");
    assertThat(DEPLOYMENT.certificates().args()).first().isEqualTo("certificates");
    assertThat(DEPLOYMENT.webhookConfiguration().path("webhooks").get(0).path("name").asString()).isEqualTo("vgpu.hami.io");
  }

  @Test
  void eachComponentIsTheServiceAccountItsWorkloadNames() {
    assertThat(DEPLOYMENT.schedulerUser()).isEqualTo(UserInfo.serviceAccount("kube-system", "hami-scheduler"));
    assertThat(DEPLOYMENT.schedulerUser().groups()).containsExactly("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated");
    UserInfo agent = DEPLOYMENT.devicePluginUser("worker1");
    assertThat(agent.username()).isEqualTo("system:serviceaccount:kube-system:hami-device-plugin");
    assertThat(agent.extra()).containsExactly(Map.entry(UserInfo.NODE_NAME_CLAIM, List.of("worker1")));
  }

  @Test
  void theDeploymentsAdmissionPoliciesAreEveryPolicyAndBindingInItsFiles(@TempDir Path dir) throws IOException {
    try (var files = Files.list(Path.of("deploy"))) {
      for (Path f : files.toList()) {
        Files.copy(f, dir.resolve(f.getFileName()));
      }
    }
    int before = ReferenceDeployment.read(dir).admissionPolicies().size();
    Files.writeString(dir.resolve("admission-policy.yaml"), """
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: extra-policy}
        spec: {validations: [{expression: 'true'}]}
        ---
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: extra-policy}
        spec: {policyName: extra-policy, validationActions: [Deny]}
        """);
    List<JsonNode> policies = ReferenceDeployment.read(dir).admissionPolicies();
    assertThat(policies).hasSize(before + 2);
    assertThat(policies).extracting(p -> p.path("kind").asString() + "/" + p.path("metadata").path("name").asString())
        .contains("ValidatingAdmissionPolicy/extra-policy", "ValidatingAdmissionPolicyBinding/extra-policy");
  }

  @Test
  void theWebhooksServicePortLeadsToTheSchedulersListener() {
    // The webhook calls Service hami-scheduler:443, whose targetPort "https" is the container port --http_bind listens on.
    assertThat(DEPLOYMENT.webhookContainerPort()).isEqualTo(9443);
    assertThat(DEPLOYMENT.scheduler().args()).contains("--http_bind=0.0.0.0:9443");
  }

  @Test
  void everyFlagThatNamesAPlaceIsAmongThePlaceFlags() {
    for (ReferenceDeployment.Container c : List.of(DEPLOYMENT.scheduler(), DEPLOYMENT.devicePlugin(), DEPLOYMENT.certificates())) {
      for (String arg : c.args()) {
        String value = arg.contains("=") ? arg.substring(arg.indexOf('=') + 1) : "";
        if (value.startsWith("/") || value.matches(".*:[0-9]+$")) {
          assertThat(ReferenceDeployment.PLACE_FLAGS).as(arg).contains(arg.substring(0, arg.indexOf('=')));
        }
      }
    }
  }
}
