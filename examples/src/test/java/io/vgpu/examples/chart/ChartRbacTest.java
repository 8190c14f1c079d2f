package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.examples.chart.RenderedChart.Options;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The chart grants vgpu's components exactly what their code calls, no verb more. Each expected grant
 * below names the class whose call needs it (found by reading every fabric8 client call in vgpu-k8s's
 * main code); a grant the chart renders that is not in this table fails the test, and so does one the
 * table needs that the chart lacks. kube-scheduler, in the scheduler's pod, has Kubernetes' own scheduler
 * roles instead (bound by name, checked below).
 */
class ChartRbacTest {
  /** resource[/name]:verb -> why. */
  private static final Map<String, String> SCHEDULER_CLUSTER = new TreeMap<>(Map.ofEntries(
      Map.entry("pods:list", "ClusterLedger: pod informer"),
      Map.entry("pods:watch", "ClusterLedger: pod informer"),
      Map.entry("pods:get", "Extender.bind reads the pod; NodeLock checks the lock holder still exists"),
      Map.entry("pods:patch", "Extender: the decision annotations (filter) and bind phase (bind)"),
      Map.entry("nodes:list", "ClusterLedger: node informer"),
      Map.entry("nodes:watch", "ClusterLedger: node informer"),
      Map.entry("nodes:get", "NodeLock and Extender.bind read the node"),
      Map.entry("nodes:patch", "SchedulerServer.registerPass: the handshake annotation"),
      Map.entry("nodes:update", "NodeLock: the lock annotation, written with the read resourceVersion"),
      Map.entry("bindings:create", "Extender.bind: client.bindings().create()"),
      Map.entry("resourcequotas:list", "ClusterLedger: quota informer"),
      Map.entry("resourcequotas:watch", "ClusterLedger: quota informer"),
      Map.entry("events:create", "EventRecorder: GrantIgnored and scheduling events"),
      Map.entry("mutatingwebhookconfigurations/hami-webhook:get", "WebhookCaBundle (vgpu certificates) reads the webhooks"),
      Map.entry("mutatingwebhookconfigurations/hami-webhook:patch", "WebhookCaBundle (vgpu certificates) writes caBundle")));

  private static final Map<String, String> SCHEDULER_NAMESPACE = new TreeMap<>(Map.ofEntries(
      Map.entry("leases/hami-scheduler:list", "LeaseLeadership: informer on kube-scheduler's Lease, by name"),
      Map.entry("leases/hami-scheduler:watch", "LeaseLeadership: informer on kube-scheduler's Lease, by name"),
      Map.entry("secrets:create", "GrantKeySecret.ensure: the first scheduler stores the grant key; ServingSecret (vgpu certificates): the first pod stores the CA and certificate"),
      Map.entry("secrets/hami-scheduler-grant-key:get", "GrantKeySecret.ensure: later schedulers read the grant key"),
      Map.entry("secrets/hami-scheduler-grant-key:update", "GrantKeySecret.ensure: a Secret with no readable key is replaced, with the read resourceVersion"),
      Map.entry("secrets/hami-scheduler-tls:get", "ServingSecret: later pods read them"),
      Map.entry("secrets/hami-scheduler-tls:update", "ServingSecret: a renewal, with the read resourceVersion")));

  private static final Map<String, String> DEVICE_PLUGIN = new TreeMap<>(Map.ofEntries(
      Map.entry("pods:list", "NodeAgent: pod informer of its node; PodAllocator lists pods to find the one starting"),
      Map.entry("pods:watch", "NodeAgent: pod informer of its node"),
      Map.entry("pods:get", "PodAllocator reads the node lock's owner"),
      Map.entry("pods:patch", "PodAllocator: the popped allocation entries and bind phase"),
      Map.entry("nodes:get", "NodeRegistrar and PodAllocator read the node"),
      Map.entry("nodes:patch", "NodeRegistrar: the register annotation and nvidia.com/gpu.* labels"),
      Map.entry("nodes:update", "NodeLock.release from PodAllocator"),
      Map.entry("events:create", "EventRecorder: the watchdog's GpuMemoryOverGrant event")));

  private static final Map<String, String> DEVICE_PLUGIN_NAMESPACE = new TreeMap<>(Map.ofEntries(
      Map.entry("secrets/hami-scheduler-grant-key:get", "GrantVerifier: GrantKeySecret.read, the key that checks the scheduler's grant signatures")));

  private static List<String> grants(JsonNode role) {
    List<String> grants = new ArrayList<>();
    for (JsonNode rule : role.path("rules")) {
      List<String> names = new ArrayList<>();
      rule.path("resourceNames").forEach(n -> names.add(n.asString()));
      for (JsonNode resource : rule.path("resources")) {
        for (JsonNode verb : rule.path("verbs")) {
          if (names.isEmpty()) {
            grants.add(resource.asString() + ":" + verb.asString());
          }
          for (String name : names) {
            grants.add(resource.asString() + "/" + name + ":" + verb.asString());
          }
        }
      }
    }
    return grants;
  }

  @Test
  void theSchedulerMayDoExactlyWhatItsCodeDoes() {
    RenderedChart chart = RenderedChart.defaults();
    assertThat(grants(chart.get("ClusterRole", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(SCHEDULER_CLUSTER.keySet());
    assertThat(grants(chart.get("Role", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(SCHEDULER_NAMESPACE.keySet());
    assertThat(chart.get("ClusterRole", "hami-scheduler").path("rules").findValues("apiGroups").toString()).doesNotContain("*");
  }

  @Test
  void withCertManagerTheSchedulerWritesNoServingSecretAndNoWebhook() {
    RenderedChart chart = RenderedChart.render(Options.defaults().with("vgpu.certificates.source", "cert-manager"));
    assertThat(grants(chart.get("ClusterRole", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(
        SCHEDULER_CLUSTER.keySet().stream().filter(g -> !g.startsWith("mutatingwebhookconfigurations")).toList());
    assertThat(grants(chart.get("Role", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(
        SCHEDULER_NAMESPACE.keySet().stream().filter(g -> !g.startsWith("secrets/hami-scheduler-tls")).toList());
  }

  /**
   * The node agent's reads are cluster-wide (a read cannot be limited by node); its writes to pods and
   * nodes are held to its own node by the ValidatingAdmissionPolicy hami-node-agent
   * (ChartAdmissionPolicyTest), and of Secrets it reads the grant key alone.
   */
  @Test
  void theNodeAgentMayDoExactlyWhatItsCodeDoes() {
    RenderedChart chart = RenderedChart.defaults();
    assertThat(grants(chart.get("ClusterRole", "hami-device-plugin"))).containsExactlyInAnyOrderElementsOf(DEVICE_PLUGIN.keySet());
    assertThat(grants(chart.get("Role", "hami-device-plugin"))).containsExactlyInAnyOrderElementsOf(DEVICE_PLUGIN_NAMESPACE.keySet());
    JsonNode binding = chart.get("RoleBinding", "hami-device-plugin");
    assertThat(binding.path("roleRef").path("name").asString()).isEqualTo("hami-device-plugin");
    assertThat(binding.path("subjects").get(0).path("name").asString()).isEqualTo("hami-device-plugin");
    assertThat(chart.get("ValidatingAdmissionPolicy", "hami-node-agent").path("spec").path("matchConstraints").path("resourceRules").get(0).path("resources").toString())
        .isEqualTo("[\"pods\",\"pods/status\",\"nodes\",\"nodes/status\"]");
  }

  /**
   * Under KAI (vgpu.kai.enabled=true) the scheduler only answers the webhook (KaiWebhookServer: Events on
   * the pods it denies; vgpu certificates: the serving certificate and the webhook's caBundle), and the
   * node agent reads KAI's BindRequests and capabilities ConfigMaps, patches its node's labels and
   * allocates nothing from pod annotations: no pod patch, no node lock, no grant key.
   */
  @Test
  void underKaiEachComponentMayDoExactlyWhatItDoesThere() {
    RenderedChart chart = RenderedChart.kai();
    assertThat(grants(chart.get("ClusterRole", "hami-scheduler"))).containsExactlyInAnyOrder(
        "events:create", "mutatingwebhookconfigurations/hami-webhook:get", "mutatingwebhookconfigurations/hami-webhook:patch");
    assertThat(grants(chart.get("Role", "hami-scheduler"))).containsExactlyInAnyOrder(
        "secrets:create", "secrets/hami-scheduler-tls:get", "secrets/hami-scheduler-tls:update");
    assertThat(grants(chart.get("ClusterRole", "hami-device-plugin"))).containsExactlyInAnyOrder(
        "pods:get", "pods:list", "pods:watch", "nodes:get", "nodes:patch", "events:create",
        "bindrequests:get", "bindrequests:list", "bindrequests:watch", "configmaps:get");
    JsonNode bindRequests = chart.get("ClusterRole", "hami-device-plugin").path("rules").get(2);
    assertThat(bindRequests.path("apiGroups").toString()).isEqualTo("[\"scheduling.run.ai\"]");
    assertThat(chart.find("Role", "hami-device-plugin")).isEmpty();
    assertThat(chart.find("Role", "hami-kube-scheduler")).isEmpty();
    assertThat(chart.find("ClusterRoleBinding", "hami-scheduler-kube-scheduler")).isEmpty();
    assertThat(chart.find("ClusterRoleBinding", "hami-scheduler-volume-scheduler")).isEmpty();
    // With cert-manager the scheduler writes no Secret at all: no Role.
    RenderedChart certManager = RenderedChart.render(Options.kai().with("vgpu.certificates.source", "cert-manager"));
    assertThat(grants(certManager.get("ClusterRole", "hami-scheduler"))).containsExactly("events:create");
    assertThat(certManager.find("Role", "hami-scheduler")).isEmpty();
    assertThat(certManager.find("RoleBinding", "hami-scheduler")).isEmpty();
  }

  /** With vgpu.kaiDialect the scheduler's informers follow KAI's Queues and PodGroups too (ClusterLedger), and that is all. */
  @Test
  void withTheKaiDialectTheSchedulerAlsoWatchesQueuesAndPodGroups() {
    RenderedChart chart = RenderedChart.kaiDialect();
    List<String> expected = new ArrayList<>(SCHEDULER_CLUSTER.keySet());
    expected.addAll(List.of("queues:list", "queues:watch", "podgroups:list", "podgroups:watch"));
    assertThat(grants(chart.get("ClusterRole", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(grants(chart.get("Role", "hami-scheduler"))).containsExactlyInAnyOrderElementsOf(SCHEDULER_NAMESPACE.keySet());
  }

  @Test
  void kubeSchedulerHasKubernetesSchedulerRolesAndItsOwnLease() {
    RenderedChart chart = RenderedChart.defaults();
    assertThat(chart.get("ClusterRoleBinding", "hami-scheduler-kube-scheduler").path("roleRef").path("name").asString()).isEqualTo("system:kube-scheduler");
    assertThat(chart.get("ClusterRoleBinding", "hami-scheduler-volume-scheduler").path("roleRef").path("name").asString()).isEqualTo("system:volume-scheduler");
    // system:kube-scheduler allows the Lease named kube-scheduler only.
    assertThat(grants(chart.get("Role", "hami-kube-scheduler"))).containsExactlyInAnyOrder("leases/hami-scheduler:get", "leases/hami-scheduler:update");
    for (String binding : List.of("hami-scheduler-kube-scheduler", "hami-scheduler-volume-scheduler", "hami-scheduler")) {
      assertThat(chart.get("ClusterRoleBinding", binding).path("subjects").get(0).path("name").asString()).isEqualTo("hami-scheduler");
    }
    assertThat(chart.get("Deployment", "hami-scheduler").path("spec").path("template").path("spec").path("serviceAccountName").asString()).isEqualTo("hami-scheduler");
    assertThat(chart.get("DaemonSet", "hami-device-plugin").path("spec").path("template").path("spec").path("serviceAccountName").asString()).isEqualTo("hami-device-plugin");
  }
}
