package io.vgpu.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ResourceSchema;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/** The reference deployment agrees with what the code serves and needs. */
class DeploymentConfigTest {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();

  private static List<JsonNode> documents(String file) throws Exception {
    List<JsonNode> docs = new ArrayList<>();
    try (var parser = YAML.createParser(Path.of("deploy", file).toFile())) {
      var it = YAML.readValues(parser, JsonNode.class);
      while (it.hasNext()) {
        docs.add(it.next());
      }
    }
    return docs;
  }

  @Test
  void kubeSchedulerCallsTheExtenderForEveryResourceItManages() throws Exception {
    JsonNode config = documents("scheduler-config.yaml").get(0);
    assertThat(config.path("apiVersion").asString()).isEqualTo("kubescheduler.config.k8s.io/v1");
    JsonNode extender = config.path("extenders").get(0);
    assertThat(extender.path("filterVerb").asString()).isEqualTo("filter");
    assertThat(extender.path("bindVerb").asString()).isEqualTo("bind");
    assertThat(extender.path("nodeCacheCapable").asBoolean()).isTrue();
    List<String> managed = new ArrayList<>();
    for (JsonNode r : extender.path("managedResources")) {
      assertThat(r.path("ignoredByScheduler").asBoolean()).isTrue();
      managed.add(r.path("name").asString());
    }
    ResourceSchema nvidia = ResourceSchema.nvidia();
    assertThat(managed).containsExactlyInAnyOrder(
        nvidia.countResource(), nvidia.memoryResource(), nvidia.coresResource(), nvidia.memoryPercentageResource(), nvidia.priorityResource());
    assertThat(config.path("profiles").get(0).path("schedulerName").asString()).isEqualTo("hami-scheduler");
  }

  @Test
  void rbacGrantsWhatTheSchedulerDoes() throws Exception {
    JsonNode role = documents("rbac.yaml").stream().filter(d -> d.path("kind").asString().equals("ClusterRole")).findFirst().orElseThrow();
    List<String> grants = new ArrayList<>();
    for (JsonNode rule : role.path("rules")) {
      for (JsonNode resource : rule.path("resources")) {
        for (JsonNode verb : rule.path("verbs")) {
          grants.add(resource.asString() + ":" + verb.asString());
        }
      }
    }
    assertThat(grants).contains(
        "pods:list", "pods:watch", "pods:get", "pods:patch", // informer, decision annotations, bind phase
        "nodes:list", "nodes:watch", "nodes:update", "nodes:patch", // node lock (update), handshake (patch)
        "bindings:create", "pods/binding:create",
        "resourcequotas:list", "resourcequotas:watch",
        "events:create",
        "leases:get", "leases:list", "leases:watch");
  }

  @Test
  void theWebhookPointsAtTheSchedulersRoute() throws Exception {
    JsonNode hook = documents("webhook.yaml").get(0).path("webhooks").get(0);
    assertThat(hook.path("clientConfig").path("service").path("path").asString()).isEqualTo("/webhook");
    assertThat(hook.path("admissionReviewVersions").toString()).isEqualTo("[\"v1\",\"v1beta1\"]");
    assertThat(hook.path("objectSelector").path("matchExpressions").get(0).path("key").asString()).isEqualTo("hami.io/webhook");
  }
}
