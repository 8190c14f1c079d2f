package io.vgpu.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/** The reference deployment (examples/deploy, the chart's render) agrees with what the code serves and needs. */
class DeploymentConfigTest {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();

  /** Every object of every manifest in examples/deploy. */
  private static List<JsonNode> objects() throws Exception {
    List<JsonNode> docs = new ArrayList<>();
    try (Stream<Path> files = Files.list(Path.of("deploy"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
        try (var parser = YAML.createParser(file.toFile())) {
          var it = YAML.readValues(parser, JsonNode.class);
          while (it.hasNext()) {
            JsonNode doc = it.next();
            if (doc != null && doc.isObject()) {
              docs.add(doc);
            }
          }
        }
      }
    }
    return docs;
  }

  private static JsonNode object(String kind, String name) throws Exception {
    return objects().stream()
        .filter(d -> d.path("kind").asString().equals(kind) && d.path("metadata").path("name").asString().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("examples/deploy has no " + kind + " " + name));
  }

  private static JsonNode container(JsonNode workload, String name) {
    JsonNode spec = workload.path("spec").path("template").path("spec");
    for (String list : List.of("initContainers", "containers")) {
      for (JsonNode c : spec.path(list)) {
        if (c.path("name").asString().equals(name)) {
          return c;
        }
      }
    }
    throw new AssertionError("no container " + name);
  }

  private static JsonNode kubeSchedulerConfig() throws Exception {
    return YAML.readTree(object("ConfigMap", "hami-scheduler").path("data").path("config.yaml").asString());
  }

  @Test
  void kubeSchedulerCallsTheExtenderForEveryResourceItManages() throws Exception {
    JsonNode config = kubeSchedulerConfig();
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

  private static List<String> grants(JsonNode role) {
    List<String> grants = new ArrayList<>();
    for (JsonNode rule : role.path("rules")) {
      for (JsonNode resource : rule.path("resources")) {
        for (JsonNode verb : rule.path("verbs")) {
          grants.add(resource.asString() + ":" + verb.asString());
        }
      }
    }
    return grants;
  }

  @Test
  void rbacGrantsWhatTheSchedulerDoes() throws Exception {
    // The chart's ChartRbacTest holds every grant to the code, verb by verb; this is the deployment's view.
    assertThat(grants(object("ClusterRole", "hami-scheduler"))).contains(
        "pods:list", "pods:watch", "pods:get", "pods:patch", // informer, decision annotations, bind phase
        "nodes:list", "nodes:watch", "nodes:update", "nodes:patch", // node lock (update), handshake (patch)
        "bindings:create",
        "resourcequotas:list", "resourcequotas:watch",
        "events:create");
    assertThat(grants(object("Role", "hami-scheduler"))).contains("leases:list", "leases:watch", "secrets:create", "secrets:get"); // Lease, grant key
  }

  /** HAMi's defaults, and the watchdog leaves the pods of the release's namespace alone. */
  @Test
  void theDeviceConfigIsHamisDefaultsWithTheReleaseNamespaceExempt(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("device-config.yaml");
    Files.writeString(file, object("ConfigMap", "hami-scheduler-device").path("data").path("device-config.yaml").asString());
    Path expected = dir.resolve("expected.yaml");
    Files.writeString(expected, "nvidia:\n  watchdog:\n    exemptNamespaces: [kube-system]\n");
    DeviceConfigReader reader = new DeviceConfigReader(Set.of());
    assertThat(reader.readFile(file)).isEqualTo(reader.readFile(expected));
    assertThat(reader.readFile(expected)).isNotEqualTo(DeviceConfig.DEFAULT);
  }

  @Test
  void theNodeAgentHasItsRightsAndItsHostPaths() throws Exception {
    assertThat(grants(object("ClusterRole", "hami-device-plugin"))).containsExactlyInAnyOrder(
        "pods:list", "pods:watch", "pods:get", "pods:patch", // pod cache, popped entries, bind phase
        "nodes:get", "nodes:patch", "nodes:update", // registration (patch), lock release (update)
        "events:create"); // the watchdog's Warning Event on a pod over its memory grant
    // The key that checks grant signatures, by name; pod and node writes are held to its node by a policy.
    JsonNode role = object("Role", "hami-device-plugin");
    assertThat(grants(role)).containsExactly("secrets:get");
    assertThat(role.path("rules").get(0).path("resourceNames").toString()).isEqualTo("[\"hami-scheduler-grant-key\"]");
    assertThat(object("ValidatingAdmissionPolicy", "hami-node-agent").path("spec").path("matchConditions").get(0).path("expression").asString())
        .contains("system:serviceaccount:kube-system:hami-device-plugin");
    JsonNode daemonSet = object("DaemonSet", "hami-device-plugin");
    JsonNode pod = daemonSet.path("spec").path("template").path("spec");
    // NVML names GPU processes by host PID; the watchdog reads their cgroups and signals them.
    assertThat(pod.path("hostPID").asBoolean()).isTrue();
    assertThat(pod.path("hostNetwork").asBoolean()).isFalse();
    assertThat(pod.path("hostIPC").asBoolean()).isFalse();
    JsonNode container = container(daemonSet, "device-plugin");
    assertThat(container.path("args").get(0).asString()).isEqualTo("device-plugin");
    String hookPath = null;
    for (JsonNode env : container.path("env")) {
      if (env.path("name").asString().equals("NODE_NAME")) {
        assertThat(env.path("valueFrom").path("fieldRef").path("fieldPath").asString()).isEqualTo("spec.nodeName");
      }
      if (env.path("name").asString().equals("HOOK_PATH")) {
        hookPath = env.path("value").asString();
      }
    }
    assertThat(hookPath).isNotNull();
    // kubelet mounts <HOOK_PATH>/vgpu/... from the host into GPU containers, so the agent must write
    // it at the same path on the host as in its own container.
    List<String> mounts = new ArrayList<>();
    for (JsonNode mount : container.path("volumeMounts")) {
      String name = mount.path("name").asString();
      for (JsonNode volume : pod.path("volumes")) {
        if (volume.path("name").asString().equals(name) && volume.has("hostPath")) {
          assertThat(volume.path("hostPath").path("path").asString()).as(name).isEqualTo(mount.path("mountPath").asString());
          mounts.add(mount.path("mountPath").asString());
        }
      }
    }
    assertThat(mounts).contains("/var/lib/kubelet/device-plugins", hookPath + "/vgpu");
    assertThat(container.path("ports").get(0).path("containerPort").asInt()).isEqualTo(9394);
  }

  @Test
  void theWebhookPointsAtTheSchedulersRoute() throws Exception {
    JsonNode hook = object("MutatingWebhookConfiguration", "hami-webhook").path("webhooks").get(0);
    assertThat(hook.path("clientConfig").path("service").path("path").asString()).isEqualTo("/webhook");
    assertThat(hook.path("admissionReviewVersions").toString()).isEqualTo("[\"v1\",\"v1beta1\"]");
    assertThat(hook.path("failurePolicy").asString()).isEqualTo("Fail");
    assertThat(hook.path("namespaceSelector").path("matchExpressions").get(0).path("key").asString()).isEqualTo("hami.io/webhook");
    // No objectSelector: the webhook judges the pod label itself (webhookIgnoreLabelNamespaces). Which pods
    // are sent is the match condition's: those asking for GPUs and those carrying the scheduler's
    // annotations, which the webhook removes (ChartTest evaluates it with CEL).
    assertThat(hook.has("objectSelector")).isFalse();
    assertThat(hook.path("matchConditions").get(0).path("expression").asString()).contains("nvidia.com/gpu", "hami.io/vgpu-devices-allocated");
  }

  @Test
  void kubeSchedulerReachesTheExtenderOnLoopbackAndKubeletProbesTheMetricsPort() throws Exception {
    JsonNode extender = kubeSchedulerConfig().path("extenders").get(0);
    JsonNode container = container(object("Deployment", "hami-scheduler"), "vgpu-scheduler-extender");
    String extenderBind = null;
    String metricsBind = ":9395";
    for (JsonNode arg : container.path("args")) {
      String a = arg.asString();
      if (a.startsWith("--extender-bind-address=")) {
        extenderBind = a.substring(a.indexOf('=') + 1);
      }
      if (a.startsWith("--metrics-bind-address=")) {
        metricsBind = a.substring(a.indexOf('=') + 1);
      }
    }
    assertThat(extenderBind).startsWith("127.0.0.1:");
    assertThat(extender.path("urlPrefix").asString()).isEqualTo("https://" + extenderBind);
    int metricsPort = Integer.parseInt(metricsBind.substring(metricsBind.lastIndexOf(':') + 1));
    for (String probe : List.of("readinessProbe", "startupProbe", "livenessProbe")) {
      JsonNode get = container.path(probe).path("httpGet");
      assertThat(get.path("port").asInt()).as(probe).isEqualTo(metricsPort);
      assertThat(get.path("scheme").asString("HTTP")).as(probe).isEqualTo("HTTP");
    }
    assertThat(container.path("readinessProbe").path("httpGet").path("path").asString()).isEqualTo("/readyz");
    assertThat(container.path("livenessProbe").path("httpGet").path("path").asString()).isEqualTo("/healthz");
    assertThat(container.path("startupProbe").path("httpGet").path("path").asString()).isEqualTo("/healthz");
  }
}
