package io.vgpu.examples.chart;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cel.common.types.SimpleType;
import io.vgpu.examples.chart.AdmissionPolicies.Denial;
import io.vgpu.examples.chart.AdmissionPolicies.Write;
import io.vgpu.examples.chart.RenderedChart.Document;
import io.vgpu.examples.chart.RenderedChart.Options;
import io.vgpu.k8s.admission.AdmissionMutator;
import io.vgpu.k8s.grant.GrantSignature;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The chart's ValidatingAdmissionPolicies: only vgpu's scheduler and node agent change a pod's grant,
 * and a node agent writes only its own Node and the pods bound to it. Every expression compiles as
 * kube-apiserver compiles it, and the policies are applied to the writes a tenant, kubelet, the
 * scheduler and node agents make (see {@link AdmissionPolicies}).
 */
class ChartAdmissionPolicyTest {
  private static final String TENANT = "alice";
  private static final String SCHEDULER = "system:serviceaccount:kube-system:hami-scheduler";
  private static final String NODE_AGENT = "system:serviceaccount:kube-system:hami-device-plugin";
  private static final String KUBELET = "system:node:node-a";
  private static final String ALLOCATED = "hami.io/vgpu-devices-allocated";
  private static final String NODE_LABEL = "hami.io/vgpu-node";

  private static final RenderedChart CHART = RenderedChart.defaults();
  private static final AdmissionPolicies POLICIES = new AdmissionPolicies(CHART.all("ValidatingAdmissionPolicy").stream().map(Document::tree).toList());

  /** The annotations only vgpu writes: the scheduler's (the webhook strips them at create) and the grant's signature. */
  private static Set<String> schedulerOwned() {
    Set<String> owned = new LinkedHashSet<>(AdmissionMutator.SCHEDULER_OWNED);
    owned.add(GrantSignature.ANNOTATION);
    return owned;
  }

  @Test
  void eachPolicyIsBoundToDenyAndFailsClosed() {
    assertThat(CHART.all("ValidatingAdmissionPolicy").stream().map(Document::name)).containsExactlyInAnyOrder("hami-scheduler-owned", "hami-node-agent");
    for (Document policy : CHART.all("ValidatingAdmissionPolicy")) {
      assertThat(policy.tree().path("apiVersion").asString()).isEqualTo("admissionregistration.k8s.io/v1");
      assertThat(policy.tree().path("spec").path("failurePolicy").asString()).as(policy.name()).isEqualTo("Fail");
      JsonNode binding = CHART.get("ValidatingAdmissionPolicyBinding", policy.name());
      assertThat(binding.path("spec").path("policyName").asString()).isEqualTo(policy.name());
      assertThat(binding.path("spec").path("validationActions").toString()).isEqualTo("[\"Deny\"]");
      assertThat(binding.path("spec").has("matchResources")).as("the binding narrows nothing").isFalse();
      for (JsonNode validation : policy.tree().path("spec").path("validations")) {
        assertThat(validation.path("message").asString()).as("a static message for when messageExpression fails").isNotBlank().doesNotContain("\n");
        assertThat(validation.path("reason").asString()).isEqualTo("Forbidden");
      }
    }
  }

  /**
   * kube-apiserver compiles each expression with object and oldObject as dyn and refuses to run a policy
   * whose validation is not bool or whose messageExpression is not string; it also type-checks them
   * against each kind the policy matches (Pod, Node), where pods' annotations are map(string, string)
   * that may be absent and request.userInfo.extra is map(string, list(string)).
   */
  @Test
  void everyExpressionCompilesAsKubeApiserverCompilesIt() {
    for (Document policy : CHART.all("ValidatingAdmissionPolicy")) {
      assertThat(AdmissionPolicies.typeCheck(policy.tree(), SimpleType.DYN)).as(policy.name() + " as it runs").isEmpty();
      for (JsonNode rule : policy.tree().path("spec").path("matchConstraints").path("resourceRules")) {
        for (JsonNode resource : rule.path("resources")) {
          if (!resource.asString().contains("/")) {
            assertThat(AdmissionPolicies.typeCheck(policy.tree(), AdmissionPolicies.KINDS.get(resource.asString())))
                .as(policy.name() + " against " + resource.asString()).isEmpty();
          }
        }
      }
    }
    // The type check catches what the API server's would: a field the kind does not have, an annotation
    // read as if it were not a string, a branch of another type.
    JsonNode broken = JsonMapper.builder().build().readTree("""
        {"spec": {"variables": [{"name": "bound", "expression": "object.spec.nodeName != ''"}],
          "validations": [{"expression": "object.metadata.annotations['x'] > 1"}, {"expression": "true", "messageExpression": "variables.bound ? 'a' : 1"}]}}""");
    assertThat(AdmissionPolicies.typeCheck(broken, AdmissionPolicies.KINDS.get("nodes"))).satisfiesExactly(
        bound -> assertThat(bound).startsWith("variables.bound: ").contains("undefined field 'nodeName'"),
        compare -> assertThat(compare).startsWith("validations[0].expression: ").contains("'_>_' applied to '(string, int)'"),
        message -> assertThat(message).startsWith("validations[1].messageExpression: ").contains("'_?_:_' applied to '(dyn, string, int)'"));
  }

  @Test
  void theProtectedAnnotationsAreExactlyTheSchedulerOwnedOnesAndTheGrantSignature() {
    Set<String> owned = schedulerOwned();
    assertThat(owned).contains(GrantSignature.ANNOTATION, ALLOCATED, "hami.io/vgpu-devices-to-allocate", "hami.io/bind-phase");
    for (String key : owned) {
      assertThat(denial(tenant(pod("node-a", Map.of()), pod("node-a", Map.of(key, "forged"))))).as("add " + key)
          .hasValue(new Denial("hami-scheduler-owned", "annotation " + key + " of pod team-a/p is written only by vgpu's scheduler and node agent: alice may not add, change or remove it"));
      assertThat(denial(tenant(pod("node-a", Map.of(key, "granted")), pod("node-a", Map.of(key, "forged"))))).as("change " + key).isPresent();
      assertThat(denial(tenant(pod("node-a", Map.of(key, "granted")), pod("node-a", Map.of())))).as("remove " + key).isPresent();
    }
    // Any other annotation, hami.io's included, is the tenant's.
    for (String other : List.of("example.com/owner", "hami.io/vgpu-devices-allocated-by", "vgpu.io/other", "hami.io/node-handshake")) {
      assertThat(denial(tenant(pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;")), pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", other, "x"))))).as(other).isEmpty();
    }
    // The static message names them all, for an API server that cannot evaluate messageExpression.
    String message = CHART.get("ValidatingAdmissionPolicy", "hami-scheduler-owned").path("spec").path("validations").get(0).path("message").asString();
    owned.forEach(key -> assertThat(message).contains(key));
  }

  @Test
  void aTenantCannotWidenItsGrantButEditsEverythingElse() {
    Map<String, String> granted = Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "example.com/team", "a");
    Map<String, String> widened = Map.of(ALLOCATED, "GPU-0,NVIDIA,81920,100:;", "example.com/team", "a");
    assertThat(denial(tenant(pod("node-a", granted), pod("node-a", widened)))).get().extracting(Denial::message)
        .isEqualTo("annotation hami.io/vgpu-devices-allocated of pod team-a/p is written only by vgpu's scheduler and node agent: alice may not add, change or remove it");
    // Through pods/status too, which carries metadata.
    assertThat(denial(write("pods", "status", pod("node-a", granted), pod("node-a", widened), TENANT, null))).isPresent();
    assertThat(denial(tenant(pod("node-a", granted), pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "example.com/team", "b"))))).isEmpty();
    // A pod that has, and keeps, no annotations and labels at all.
    assertThat(denial(tenant(pod("node-a", null), withLabels(pod("node-a", null), Map.of("app", "x"))))).isEmpty();
    assertThat(denial(tenant(pod("node-a", null), pod("node-a", null)))).isEmpty();
  }

  @Test
  void theNodeLabelIsTheSchedulers() {
    Map<String, Object> labelled = withLabels(pod("node-a", null), Map.of(NODE_LABEL, "node-a", "app", "x"));
    assertThat(denial(tenant(withLabels(pod("node-a", null), Map.of("app", "x")), labelled))).get().extracting(Denial::message)
        .isEqualTo("label hami.io/vgpu-node of pod team-a/p is written only by vgpu's scheduler and node agent: alice may not add, change or remove it");
    assertThat(denial(tenant(labelled, withLabels(pod("node-a", null), Map.of(NODE_LABEL, "node-b", "app", "x"))))).isPresent();
    assertThat(denial(tenant(labelled, pod("node-a", null)))).isPresent();
    assertThat(denial(tenant(labelled, withLabels(pod("node-a", null), Map.of(NODE_LABEL, "node-a", "app", "y"))))).isEmpty();
    assertThat(denial(write("pods", "", pod("", null), labelled, SCHEDULER, null))).isEmpty();
  }

  @Test
  void theSchedulerKubeletAndOtherWritersThatLeaveTheGrantAlone() {
    Map<String, Object> before = pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "hami.io/bind-phase", "allocating"));
    Map<String, Object> after = pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "hami.io/bind-phase", "success"));
    assertThat(denial(write("pods", "", pod("", Map.of()), before, SCHEDULER, null))).isEmpty();
    assertThat(denial(write("pods", "", before, pod("", Map.of()), SCHEDULER, null))).isEmpty();
    // kubelet's status update leaves the annotations as they were.
    Map<String, Object> running = new HashMap<>(before);
    running.put("status", Map.of("phase", "Running"));
    assertThat(denial(write("pods", "status", before, running, KUBELET, null))).isEmpty();
    // ... and may not change them either.
    assertThat(denial(write("pods", "status", before, after, KUBELET, null))).get().extracting(Denial::policy).isEqualTo("hami-scheduler-owned");
    // A ConfigMap is no pod.
    assertThat(POLICIES.admit(new Write("configmaps", "", pod("", Map.of(ALLOCATED, "x")), pod("", Map.of()), request(TENANT, null, "team-a", "p")))).isEmpty();
  }

  @Test
  void aNodeAgentWritesOnlyItsOwnNodeAndThePodsBoundToIt() {
    Map<String, Object> before = pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "hami.io/bind-phase", "allocating"));
    Map<String, Object> after = pod("node-a", Map.of(ALLOCATED, "GPU-0,NVIDIA,1024,10:;", "hami.io/bind-phase", "success"));
    assertThat(denial(write("pods", "", before, after, NODE_AGENT, "node-a"))).isEmpty();
    assertThat(denial(write("pods", "", before, after, NODE_AGENT, "node-b"))).hasValue(new Denial("hami-node-agent",
        "the node agent of node node-b may write only the pods bound to that node: pod team-a/p is bound to node-a"));
    assertThat(denial(write("pods", "status", before, after, NODE_AGENT, "node-b"))).isPresent();
    assertThat(denial(write("pods", "", pod("", Map.of()), pod("", Map.of("example.com/x", "y")), NODE_AGENT, "node-a"))).hasValue(new Denial("hami-node-agent",
        "the node agent of node node-a may write only the pods bound to that node: pod team-a/p is bound to no node"));

    assertThat(denial(nodeWrite("node-a", "", "node-a"))).isEmpty();
    assertThat(denial(nodeWrite("node-a", "status", "node-a"))).isEmpty();
    assertThat(denial(nodeWrite("node-b", "", "node-a"))).hasValue(new Denial("hami-node-agent", "the node agent of node node-a may write only its own Node, not Node node-b"));
    assertThat(denial(nodeWrite("node-b", "status", "node-a"))).isPresent();

    // A token without the node-name claim (a legacy Secret token) writes nothing.
    String noClaim = "system:serviceaccount:kube-system:hami-device-plugin has no authentication.kubernetes.io/node-name claim"
        + " (the bound ServiceAccount token of a pod names its node): a node agent may write only its own Node and the pods bound to it";
    assertThat(denial(write("pods", "", before, after, NODE_AGENT, null))).hasValue(new Denial("hami-node-agent", noClaim));
    assertThat(denial(nodeWrite("node-a", "", null))).hasValue(new Denial("hami-node-agent", noClaim));
    assertThat(denial(new Write("pods", "", after, before, request(NODE_AGENT, List.of(), "team-a", "p")))).hasValue(new Denial("hami-node-agent", noClaim));

    // The scheduler writes nodes anywhere (the node lock, the handshake).
    assertThat(POLICIES.admit(new Write("nodes", "", node("node-b"), node("node-b"), request(SCHEDULER, null, null, "node-b")))).isEmpty();
  }

  @Test
  void anotherReleaseNameNamesItsPoliciesAndServiceAccounts() {
    RenderedChart gpu = RenderedChart.render(Options.defaults().named("gpu"));
    JsonNode owned = gpu.get("ValidatingAdmissionPolicy", "gpu-hami-scheduler-owned");
    assertThat(owned.path("spec").path("matchConditions").get(0).path("expression").asString())
        .isEqualTo("!(request.userInfo.username in [\"system:serviceaccount:kube-system:gpu-hami-scheduler\",\"system:serviceaccount:kube-system:gpu-hami-device-plugin\"])");
    assertThat(gpu.get("ValidatingAdmissionPolicy", "gpu-hami-node-agent").path("spec").path("matchConditions").get(0).path("expression").asString())
        .isEqualTo("request.userInfo.username == \"system:serviceaccount:kube-system:gpu-hami-device-plugin\"");
    assertThat(gpu.get("ValidatingAdmissionPolicyBinding", "gpu-hami-node-agent").path("spec").path("policyName").asString()).isEqualTo("gpu-hami-node-agent");
    // Without the node agent, neither its policy nor its exemption.
    RenderedChart noAgent = RenderedChart.render(Options.defaults().with("devicePlugin.enabled", "false"));
    assertThat(noAgent.find("ValidatingAdmissionPolicy", "hami-node-agent")).isEmpty();
    assertThat(noAgent.get("ValidatingAdmissionPolicy", "hami-scheduler-owned").path("spec").path("matchConditions").get(0).path("expression").asString())
        .isEqualTo("!(request.userInfo.username in [\"system:serviceaccount:kube-system:hami-scheduler\"])");
  }

  // --- In the KAI role (vgpu.kai.enabled=true)

  private static final RenderedChart KAI = RenderedChart.kai();
  private static final AdmissionPolicies KAI_POLICIES = new AdmissionPolicies(KAI.all("ValidatingAdmissionPolicy").stream().map(Document::tree).toList());
  private static final String KAI_SCHEDULER = "system:serviceaccount:kai-scheduler:scheduler";
  private static final String KAI_BINDER = "system:serviceaccount:kai-scheduler:binder";
  private static final String GARBAGE_COLLECTOR = "system:serviceaccount:kube-system:generic-garbage-collector";

  @Test
  void underKaiThePoliciesKeepKaisDecisionKaisAndFailClosed() {
    assertThat(KAI.all("ValidatingAdmissionPolicy").stream().map(Document::name)).containsExactlyInAnyOrder("hami-node-agent", "hami-kai-bindrequests", "hami-kai-sharing");
    for (Document policy : KAI.all("ValidatingAdmissionPolicy")) {
      assertThat(policy.tree().path("spec").path("failurePolicy").asString()).as(policy.name()).isEqualTo("Fail");
      JsonNode binding = KAI.get("ValidatingAdmissionPolicyBinding", policy.name());
      assertThat(binding.path("spec").path("policyName").asString()).isEqualTo(policy.name());
      assertThat(binding.path("spec").path("validationActions").toString()).isEqualTo("[\"Deny\"]");
      assertThat(binding.path("spec").has("matchResources")).isFalse();
      assertThat(AdmissionPolicies.typeCheck(policy.tree(), SimpleType.DYN)).as(policy.name() + " as it runs").isEmpty();
      for (JsonNode rule : policy.tree().path("spec").path("matchConstraints").path("resourceRules")) {
        for (JsonNode resource : rule.path("resources")) {
          if (!resource.asString().contains("/")) {
            assertThat(AdmissionPolicies.typeCheck(policy.tree(), AdmissionPolicies.KINDS.get(resource.asString()))).as(policy.name() + " against " + resource.asString()).isEmpty();
          }
        }
      }
      for (JsonNode validation : policy.tree().path("spec").path("validations")) {
        assertThat(validation.path("message").asString()).isNotBlank().doesNotContain("\n");
        assertThat(validation.path("reason").asString()).isEqualTo("Forbidden");
      }
    }
  }

  @Test
  void onlyKaisSchedulerAndBinderWriteBindRequests() {
    for (String operation : List.of("CREATE", "UPDATE", "DELETE")) {
      assertThat(KAI_POLICIES.admit(bindRequest(operation, "", TENANT))).as(operation).hasValue(new Denial("hami-kai-bindrequests",
          "BindRequest team-a/p is KAI Scheduler's decision, from which vgpu's node agent derives the grant: alice may not " + operation + " it"));
      assertThat(KAI_POLICIES.admit(bindRequest(operation, "", KAI_SCHEDULER))).as(operation).isEmpty();
      assertThat(KAI_POLICIES.admit(bindRequest(operation, "", KAI_BINDER))).as(operation).isEmpty();
    }
    // Its status too, and vgpu's own node agent writes none.
    assertThat(KAI_POLICIES.admit(bindRequest("UPDATE", "status", TENANT))).isPresent();
    assertThat(KAI_POLICIES.admit(bindRequest("UPDATE", "status", KAI_BINDER))).isEmpty();
    assertThat(KAI_POLICIES.admit(bindRequest("CREATE", "", NODE_AGENT))).isPresent();
    // A BindRequest is owned by its pod: the garbage collector deletes it with the pod, and writes nothing else.
    assertThat(KAI_POLICIES.admit(bindRequest("DELETE", "", GARBAGE_COLLECTOR))).isEmpty();
    assertThat(KAI_POLICIES.admit(bindRequest("CREATE", "", GARBAGE_COLLECTOR))).isPresent();
    // The static message names who may write them.
    assertThat(KAI.get("ValidatingAdmissionPolicy", "hami-kai-bindrequests").path("spec").path("validations").get(0).path("message").asString())
        .contains(KAI_SCHEDULER).contains(KAI_BINDER);
    // Another KAI namespace is a value.
    RenderedChart other = RenderedChart.render(Options.kai().with("vgpu.kai.bindRequestWriters[0]", "system:serviceaccount:kai:scheduler")
        .with("vgpu.kai.bindRequestWriters[1]", "system:serviceaccount:kai:binder"));
    assertThat(other.get("ValidatingAdmissionPolicy", "hami-kai-bindrequests").path("spec").path("matchConditions").get(0).path("expression").asString())
        .isEqualTo("!(request.userInfo.username in [\"system:serviceaccount:kai:scheduler\",\"system:serviceaccount:kai:binder\"])");
  }

  @Test
  void underKaiTheSharingAnnotationsAreFixedAtCreation() {
    Map<String, Object> plain = pod("", Map.of("example.com/team", "a"));
    for (String key : List.of("gpu-fraction", "gpu-memory", "gpu-fraction-num-devices", "gpu-fraction-container-name")) {
      assertThat(KAI_POLICIES.admit(tenant(plain, pod("", Map.of("example.com/team", "a", key, "1"))))).as("add " + key).hasValue(new Denial("hami-kai-sharing",
          "annotation " + key + " of pod team-a/p is fixed at the pod's creation, when vgpu's webhook isolates the pods KAI Scheduler shares: alice may not add, change or remove it"));
      assertThat(KAI_POLICIES.admit(tenant(pod("", Map.of(key, "1")), pod("", Map.of(key, "2"))))).as("change " + key).isPresent();
      assertThat(KAI_POLICIES.admit(tenant(pod("", Map.of(key, "1")), pod("", Map.of())))).as("remove " + key).isPresent();
    }
    // What KAI's binder writes on a shared pod, and any other annotation, stays writable.
    Map<String, Object> shared = pod("", Map.of("gpu-memory", "20480"));
    assertThat(KAI_POLICIES.admit(write("pods", "", shared, withLabels(pod("", Map.of("gpu-memory", "20480", "received-resource-type", "Fraction")), Map.of("runai-gpu-group", "g")),
        KAI_BINDER, null))).isEmpty();
    assertThat(KAI_POLICIES.admit(tenant(shared, pod("", Map.of("gpu-memory", "20480", "example.com/x", "y"))))).isEmpty();
    // HAMi's annotations mean nothing under KAI: no scheduler-owned policy.
    assertThat(KAI.find("ValidatingAdmissionPolicy", "hami-scheduler-owned")).isEmpty();
  }

  private static Write bindRequest(String operation, String subResource, String user) {
    Map<String, Object> request = request(user, null, "team-a", "p");
    request.put("operation", operation);
    if (!subResource.isEmpty()) {
      request.put("subResource", subResource);
    }
    Map<String, Object> object = Map.of("apiVersion", "scheduling.run.ai/v1alpha2", "kind", "BindRequest", "metadata", Map.of("name", "p", "namespace", "team-a"),
        "spec", Map.of("selectedNode", "node-a", "selectedGPUGroups", List.of("g"), "receivedResourceType", "Fraction"));
    return new Write("scheduling.run.ai", "v1alpha2", "bindrequests", subResource, operation.equals("DELETE") ? Map.of() : object,
        operation.equals("CREATE") ? Map.of() : object, request);
  }

  private static Optional<Denial> denial(Write write) {
    return POLICIES.admit(write);
  }

  private static Write tenant(Map<String, Object> before, Map<String, Object> after) {
    return write("pods", "", before, after, TENANT, null);
  }

  private static Write write(String resource, String subResource, Map<String, Object> before, Map<String, Object> after, String user, @Nullable String nodeClaim) {
    Map<String, Object> request = request(user, nodeClaim == null ? null : List.of(nodeClaim), "team-a", "p");
    if (!subResource.isEmpty()) {
      request.put("subResource", subResource);
    }
    return new Write(resource, subResource, after, before, request);
  }

  private static Write nodeWrite(String node, String subResource, @Nullable String nodeClaim) {
    Map<String, Object> request = request(NODE_AGENT, nodeClaim == null ? null : List.of(nodeClaim), null, node);
    if (!subResource.isEmpty()) {
      request.put("subResource", subResource);
    }
    return new Write("nodes", subResource, node(node), node(node), request);
  }

  /**
   * An UPDATE request as kube-apiserver passes it to CEL (absent fields are absent, not empty), by a user
   * whose token names these nodes (null: a token without the claim).
   */
  private static Map<String, Object> request(String user, @Nullable List<String> nodeClaim, @Nullable String namespace, String name) {
    Map<String, Object> userInfo = new LinkedHashMap<>();
    userInfo.put("username", user);
    userInfo.put("groups", user.startsWith("system:serviceaccount:") ? List.of("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
        : user.startsWith("system:node:") ? List.of("system:nodes", "system:authenticated") : List.of("system:authenticated"));
    if (nodeClaim != null) {
      userInfo.put("extra", Map.of("authentication.kubernetes.io/node-name", nodeClaim, "authentication.kubernetes.io/pod-name", List.of("hami-device-plugin-x")));
    }
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("operation", "UPDATE");
    request.put("name", name);
    if (namespace != null) {
      request.put("namespace", namespace);
    }
    request.put("userInfo", userInfo);
    return request;
  }

  /** Pod team-a/p bound to {@code node} ("" for none), with these annotations (null: none at all). */
  private static Map<String, Object> pod(String node, @Nullable Map<String, String> annotations) {
    Map<String, Object> metadata = new LinkedHashMap<>();
    metadata.put("name", "p");
    metadata.put("namespace", "team-a");
    if (annotations != null) {
      metadata.put("annotations", annotations);
    }
    Map<String, Object> spec = new LinkedHashMap<>();
    spec.put("schedulerName", "hami-scheduler");
    spec.put("containers", List.of(Map.of("name", "c")));
    if (!node.isEmpty()) {
      spec.put("nodeName", node);
    }
    Map<String, Object> pod = new LinkedHashMap<>();
    pod.put("apiVersion", "v1");
    pod.put("kind", "Pod");
    pod.put("metadata", metadata);
    pod.put("spec", spec);
    return pod;
  }

  private static Map<String, Object> withLabels(Map<String, Object> pod, Map<String, String> labels) {
    Map<String, Object> copy = new LinkedHashMap<>(pod);
    Map<String, Object> metadata = new LinkedHashMap<>();
    ((Map<?, ?>) pod.get("metadata")).forEach((k, v) -> metadata.put((String) k, v));
    metadata.put("labels", labels);
    copy.put("metadata", metadata);
    return copy;
  }

  private static Map<String, Object> node(String name) {
    return Map.of("apiVersion", "v1", "kind", "Node", "metadata", Map.of("name", name, "labels", Map.of("gpu", "on"), "annotations", Map.of("hami.io/node-handshake", "Requesting_2026-01-01 00:00:00")),
        "spec", Map.of("podCIDR", "10.0.1.0/24"));
  }
}
