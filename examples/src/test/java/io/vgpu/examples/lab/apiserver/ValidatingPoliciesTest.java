package io.vgpu.examples.lab.apiserver;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.MappingIterator;
import tools.jackson.databind.node.ObjectNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/** ValidatingAdmissionPolicies as the stand-in applies them, with fixture policies written as the chart writes its own. */
class ValidatingPoliciesTest {
  private static final YAMLMapper YAML = YAMLMapper.builder().build();
  static final String ALLOCATED = "hami.io/vgpu-devices-allocated";
  static final UserInfo SCHEDULER = UserInfo.serviceAccount("kube-system", "hami-scheduler");
  static final UserInfo AGENT_W1 = UserInfo.boundServiceAccount("kube-system", "hami-device-plugin", "w1");
  private static final ApiPath POD = new ApiPath("", "v1", "team-a", "pods", "p1", "");
  private static final ApiPath POD_STATUS = new ApiPath("", "v1", "team-a", "pods", "p1", "status");
  private static final ApiPath NODE_W1 = new ApiPath("", "v1", "", "nodes", "w1", "");
  private static final ApiPath NODE_W2 = new ApiPath("", "v1", "", "nodes", "w2", "");

  private final ValidatingPolicies fixture = compile(fixtureObjects());

  /** The fixture policies and bindings of the tests' resources. */
  static List<JsonNode> fixtureObjects() {
    try (InputStream in = ValidatingPoliciesTest.class.getResourceAsStream("fixture-policies.yaml");
        MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(in)) {
      return it.readAll();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static ValidatingPolicies compile(List<JsonNode> objects) {
    List<JsonNode> policies = new ArrayList<>();
    List<JsonNode> bindings = new ArrayList<>();
    for (JsonNode o : objects) {
      (o.path("kind").asString().equals("ValidatingAdmissionPolicy") ? policies : bindings).add(o);
    }
    return ValidatingPolicies.compile(policies, bindings);
  }

  private static ValidatingPolicies compile(String yaml) {
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(yaml)) {
      return compile(it.readAll());
    }
  }

  /** A policy on pod UPDATEs with the given spec fields (YAML, indented by 2) and a Deny binding. */
  private static ValidatingPolicies podPolicy(String specFields) {
    return compile("""
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: p}
        spec:
          matchConstraints:
            resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [pods]}]
        %s
        ---
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: b}
        spec: {policyName: p, validationActions: [Deny]}
        """.formatted(specFields.indent(2)));
  }

  static ObjectNode pod(String node, Map<String, String> annotations) {
    ObjectNode pod = YAML.createObjectNode();
    pod.put("apiVersion", "v1").put("kind", "Pod");
    ObjectNode metadata = pod.putObject("metadata").put("name", "p1").put("namespace", "team-a");
    metadata.putObject("labels").put("app", "train");
    annotations.forEach(metadata.withObject("annotations")::put);
    ObjectNode spec = pod.putObject("spec");
    if (!node.isEmpty()) {
      spec.put("nodeName", node);
    }
    return pod;
  }

  private static ObjectNode node(String name) {
    ObjectNode node = YAML.createObjectNode();
    node.put("apiVersion", "v1").put("kind", "Node");
    node.putObject("metadata").put("name", name);
    return node;
  }

  private static AdmissionAttributes write(String operation, ApiPath path, UserInfo user, JsonNode object, JsonNode old) {
    JsonNode typed = object != null ? object : old;
    return new AdmissionAttributes(operation, path, typed.path("kind").asString(), "v1", user, object, old, ns -> null);
  }

  private static AdmissionAttributes update(ApiPath path, UserInfo user, JsonNode object, JsonNode old) {
    return write(AdmissionAttributes.UPDATE, path, user, object, old);
  }

  private static String message(Optional<ValidatingPolicies.Denial> denial) {
    assertThat(denial).as("a denial").isPresent();
    return denial.get().message();
  }

  // --- the scheduler-owned annotations

  @Test
  void aTenantChangingAGrantIsDeniedNamingTheKeyInTheApiServersWords() {
    Optional<ValidatingPolicies.Denial> denial =
        fixture.validate(update(POD, UserInfo.TENANT, pod("w1", Map.of(ALLOCATED, "GPU-b,NVIDIA,40960,100:;")), pod("w1", Map.of(ALLOCATED, "GPU-a,NVIDIA,1024,10:;"))));
    assertThat(message(denial)).isEqualTo("only vgpu may change " + ALLOCATED);
    assertThat(denial.get().code()).isEqualTo(422);
    assertThat(denial.get().reason()).isEqualTo("Invalid");
    assertThat(denial.get().statusMessage(POD, "p1"))
        .isEqualTo("pods \"p1\" is forbidden: ValidatingAdmissionPolicy 'test-scheduler-owned' with binding 'test-scheduler-owned-binding' denied request: only vgpu may change "
            + ALLOCATED);
  }

  @Test
  void addingOrRemovingAGrantIsAChangeToo() {
    JsonNode with = pod("w1", Map.of(ALLOCATED, "GPU-a,NVIDIA,1024,10:;"));
    JsonNode without = pod("w1", Map.of());
    assertThat(message(fixture.validate(update(POD, UserInfo.TENANT, with, without)))).endsWith(ALLOCATED);
    assertThat(message(fixture.validate(update(POD, UserInfo.TENANT, without, with)))).endsWith(ALLOCATED);
    JsonNode noAnnotations = pod("w1", Map.of());
    ((ObjectNode) noAnnotations.path("metadata")).remove("annotations");
    assertThat(message(fixture.validate(update(POD, UserInfo.TENANT, with, noAnnotations)))).endsWith(ALLOCATED);
  }

  @Test
  void otherAnnotationsAndTheSchedulerAndTheNodeAgentPass() {
    JsonNode before = pod("w1", Map.of(ALLOCATED, "GPU-a,NVIDIA,1024,10:;"));
    assertThat(fixture.validate(update(POD, UserInfo.TENANT, pod("w1", Map.of(ALLOCATED, "GPU-a,NVIDIA,1024,10:;", "team", "x")), before))).isEmpty();
    JsonNode changed = pod("w1", Map.of(ALLOCATED, "GPU-b,NVIDIA,1024,10:;"));
    assertThat(fixture.validate(update(POD, SCHEDULER, changed, before))).isEmpty();
    assertThat(fixture.validate(update(POD, AGENT_W1, changed, before))).isEmpty();
  }

  @Test
  void theStatusSubresourceIsMatchedWhereTheRuleNamesItAndOtherSubresourcesAreNot() {
    JsonNode before = pod("w1", Map.of());
    JsonNode after = pod("w1", Map.of(ALLOCATED, "GPU-b,NVIDIA,40960,100:;"));
    assertThat(message(fixture.validate(update(POD_STATUS, UserInfo.TENANT, after, before)))).endsWith(ALLOCATED);
    ApiPath eviction = new ApiPath("", "v1", "team-a", "pods", "p1", "eviction");
    assertThat(fixture.validate(update(eviction, UserInfo.TENANT, after, before))).isEmpty();
  }

  @Test
  void aCreateIsNotAnUpdate() {
    assertThat(fixture.validate(write(AdmissionAttributes.CREATE, new ApiPath("", "v1", "team-a", "pods", "", ""), UserInfo.TENANT,
        pod("", Map.of(ALLOCATED, "GPU-b,NVIDIA,40960,100:;")), null))).isEmpty();
  }

  // --- the node agent

  @Test
  void aNodeAgentWritesItsOwnNodeAndThePodsBoundToIt() {
    assertThat(fixture.validate(update(NODE_W1, AGENT_W1, node("w1"), node("w1")))).isEmpty();
    assertThat(fixture.validate(update(new ApiPath("", "v1", "", "nodes", "w1", "status"), AGENT_W1, node("w1"), node("w1")))).isEmpty();
    assertThat(fixture.validate(update(POD, AGENT_W1, pod("w1", Map.of("x", "y")), pod("w1", Map.of())))).isEmpty();
  }

  /** A JSON null is no field to kube-apiserver: the chart's policy sees a Node whatever nulls the write carried. */
  @Test
  void theChartsNodeAgentPolicySeesANullNamespaceAsNone() throws IOException {
    ValidatingPolicies chart;
    try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(java.nio.file.Path.of("deploy/device-plugin-admission-policy.yaml").toFile())) {
      chart = compile(it.readAll());
    }
    UserInfo agent = UserInfo.boundServiceAccount("kube-system", "hami-device-plugin", "w1");
    ObjectNode written = node("w1");
    written.withObject("metadata").putNull("namespace");
    assertThat(chart.validate(update(NODE_W1, agent, written, node("w1")))).isEmpty();
    assertThat(message(chart.validate(update(NODE_W2, agent, node("w2"), node("w2"))))).isEqualTo("the node agent of node w1 may write only its own Node, not Node w2");
  }

  @Test
  void aNodeAgentIsDeniedAnotherNodeAndItsPods() {
    assertThat(message(fixture.validate(update(NODE_W2, AGENT_W1, node("w2"), node("w2"))))).isEqualTo("a node agent may write only its own Node, w1");
    assertThat(message(fixture.validate(update(POD, AGENT_W1, pod("w2", Map.of("x", "y")), pod("w2", Map.of())))))
        .isEqualTo("a node agent may write only pods bound to w1");
    // bound nowhere yet: not its pod either
    assertThat(message(fixture.validate(update(POD, AGENT_W1, pod("", Map.of("x", "y")), pod("", Map.of()))))).isEqualTo("a node agent may write only pods bound to w1");
  }

  @Test
  void aNodeAgentTokenWithoutTheNodeNameClaimIsDenied() {
    UserInfo unbound = UserInfo.serviceAccount("kube-system", "hami-device-plugin");
    assertThat(message(fixture.validate(update(NODE_W1, unbound, node("w1"), node("w1"))))).isEqualTo("the node agent's token carries no node-name claim");
  }

  @Test
  void aPolicyWhoseMatchConditionIsFalseIsSkipped() {
    // the node-agent policy's condition names the node agent: a kubelet writing another node is not its business
    assertThat(fixture.validate(update(NODE_W2, UserInfo.node("w1"), node("w2"), node("w2")))).isEmpty();
  }

  // --- evaluation rules

  @Test
  void anExpressionThatFailsDeniesUnderFailAndIsPassedOverUnderIgnore() {
    String validation = "validations: [{expression: \"object.metadata.annotations['missing'] == 'x'\"}]";
    Optional<ValidatingPolicies.Denial> denial = podPolicy(validation).validate(update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of())));
    assertThat(message(denial)).isEqualTo("expression 'object.metadata.annotations['missing'] == 'x'' resulted in error: no such key: missing");
    assertThat(denial.get().code()).isEqualTo(422);
    assertThat(podPolicy("failurePolicy: Ignore\n" + validation).validate(update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of())))).isEmpty();
  }

  @Test
  void anExpressionThatDoesNotCompileDeniesUnderFail() {
    assertThat(message(podPolicy("validations: [{expression: \"object.metadata.name ==\"}]").validate(update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of())))))
        .startsWith("compilation error: ");
  }

  @Test
  void aMatchConditionThatFailsDeniesUnderFailUnlessAnotherIsFalse() {
    String failing = "{name: broken, expression: \"object.metadata.annotations['missing'] == 'x'\"}";
    AdmissionAttributes write = update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of()));
    assertThat(message(podPolicy("matchConditions: [" + failing + "]\nvalidations: [{expression: 'true'}]").validate(write)))
        .isEqualTo("expression 'object.metadata.annotations['missing'] == 'x'' resulted in error: no such key: missing");
    assertThat(podPolicy("matchConditions: [" + failing + ", {name: no, expression: 'false'}]\nvalidations: [{expression: 'false'}]").validate(write)).isEmpty();
    assertThat(podPolicy("failurePolicy: Ignore\nmatchConditions: [" + failing + "]\nvalidations: [{expression: 'false'}]").validate(write)).isEmpty();
  }

  @Test
  void aFailedValidationSaysItsMessageOrItsExpressionWithItsReason() {
    AdmissionAttributes write = update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of()));
    Optional<ValidatingPolicies.Denial> plain = podPolicy("validations: [{expression: \"object.metadata.name != 'p1'\"}]").validate(write);
    assertThat(message(plain)).isEqualTo("failed expression: object.metadata.name != 'p1'");
    Optional<ValidatingPolicies.Denial> forbidden = podPolicy("validations: [{expression: 'false', message: ' no ', reason: Forbidden}]").validate(write);
    assertThat(message(forbidden)).isEqualTo("no");
    assertThat(forbidden.get().code()).isEqualTo(403);
    // a messageExpression that fails or is not one line falls back to the message
    assertThat(message(podPolicy("validations: [{expression: 'false', message: m, messageExpression: \"object.missing\"}]").validate(write))).isEqualTo("m");
    assertThat(message(podPolicy("validations: [{expression: 'false', message: m, messageExpression: \"'a\\\\nb'\"}]").validate(write))).isEqualTo("m");
  }

  @Test
  void variablesAreEvaluatedWhenFirstUsed() {
    AdmissionAttributes write = update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of()));
    String variables = "variables: [{name: broken, expression: \"object.missing\"}, {name: name, expression: 'object.metadata.name'}]\n";
    assertThat(podPolicy(variables + "validations: [{expression: \"variables.name == 'p1'\"}]").validate(write)).isEmpty();
    assertThat(message(podPolicy(variables + "validations: [{expression: \"variables.broken == 'x'\"}]").validate(write))).contains("no such key: missing");
  }

  @Test
  void aBindingDeniesOnlyWithDenyAndOnlyWhereItsOwnMatchSelects() {
    String policy = """
        apiVersion: admissionregistration.k8s.io/v1
        kind: ValidatingAdmissionPolicy
        metadata: {name: p}
        spec:
          matchConstraints:
            resourceRules: [{apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}]
          validations: [{expression: 'false', message: never}]
        ---
        """;
    AdmissionAttributes write = update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of()));
    assertThat(compile(policy + "kind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: p, validationActions: [Warn, Audit]}\n").validate(write)).isEmpty();
    assertThat(compile(policy + "kind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec: {policyName: other, validationActions: [Deny]}\n").validate(write)).isEmpty();
    String selecting = "kind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec:\n  policyName: p\n  validationActions: [Deny]\n"
        + "  matchResources: {objectSelector: {matchLabels: {app: %s}}}\n";
    assertThat(compile(policy + selecting.formatted("serve")).validate(write)).isEmpty();
    assertThat(message(compile(policy + selecting.formatted("train")).validate(write))).isEqualTo("never");
  }

  @Test
  void namespaceSelectorsSeeTheNamespacesLabelsAndLeaveClusterScopedObjectsIn() {
    ValidatingPolicies policies = compile("""
        kind: ValidatingAdmissionPolicy
        metadata: {name: p}
        spec:
          matchConstraints:
            namespaceSelector: {matchExpressions: [{key: tenant, operator: Exists}]}
            resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [pods, nodes]}]
          validations: [{expression: 'false', message: never}]
        ---
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: b}
        spec: {policyName: p, validationActions: [Deny]}
        """);
    JsonNode tenantNamespace = YAML.createObjectNode().set("metadata", YAML.createObjectNode().put("name", "team-a").set("labels", YAML.createObjectNode().put("tenant", "a")));
    JsonNode pod = pod("w1", Map.of());
    assertThat(message(policies.validate(new AdmissionAttributes("UPDATE", POD, "Pod", "v1", UserInfo.TENANT, pod, pod, ns -> tenantNamespace)))).isEqualTo("never");
    assertThat(policies.validate(new AdmissionAttributes("UPDATE", POD, "Pod", "v1", UserInfo.TENANT, pod, pod, ns -> null))).isEmpty();
    assertThat(message(policies.validate(update(NODE_W1, UserInfo.TENANT, node("w1"), node("w1"))))).isEqualTo("never");
  }

  @Test
  void deletesSeeTheOldObjectOnlyAndObjectSelectorsItsLabels() {
    ValidatingPolicies policies = compile("""
        kind: ValidatingAdmissionPolicy
        metadata: {name: keep}
        spec:
          matchConstraints:
            objectSelector: {matchLabels: {app: train}}
            resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}]
          validations:
            - expression: "object == null && oldObject.metadata.name != 'p1'"
              messageExpression: "'keep ' + oldObject.metadata.name + ', ' + request.operation"
        ---
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: b}
        spec: {policyName: keep, validationActions: [Deny]}
        """);
    assertThat(message(policies.validate(write(AdmissionAttributes.DELETE, POD, UserInfo.TENANT, null, pod("w1", Map.of()))))).isEqualTo("keep p1, DELETE");
    assertThat(policies.validate(update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of())))).isEmpty();
  }

  @Test
  void requestCarriesTheWriteAndTheUserAsKubeApiserverDoes() {
    ValidatingPolicies statusPolicy = compile(("""
        kind: ValidatingAdmissionPolicy
        metadata: {name: p}
        spec:
          matchConstraints:
            resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: ["pods/*"]}]
          validations:
            - expression: "false"
              messageExpression: >-
                request.operation + ' ' + request.resource.resource + '/' + request.subResource + ' ' + request.kind.kind + ' '
                + request.namespace + '/' + request.name + ' by ' + request.userInfo.username + ' in ' + request.userInfo.groups.join(',')
                + ' on ' + request.userInfo.extra['authentication.kubernetes.io/node-name'][0]
        ---
        kind: ValidatingAdmissionPolicyBinding
        metadata: {name: b}
        spec: {policyName: p, validationActions: [Deny]}
        """));
    assertThat(message(statusPolicy.validate(update(POD_STATUS, AGENT_W1, pod("w1", Map.of()), pod("w1", Map.of())))))
        .isEqualTo("UPDATE pods/status Pod team-a/p1 by system:serviceaccount:kube-system:hami-device-plugin in "
            + "system:serviceaccounts,system:serviceaccounts:kube-system,system:authenticated on w1");
    // the object itself has no subResource field, and a user without extra has no extra field
    ValidatingPolicies absent = podPolicy("validations: [{expression: \"!has(request.subResource) && !has(request.userInfo.extra)\", message: present}]");
    assertThat(absent.validate(update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of())))).isEmpty();
  }

  @Test
  void aPolicyWithParametersIsMisconfiguredAndItsFailurePolicyDecides() {
    AdmissionAttributes write = update(POD, UserInfo.TENANT, pod("w1", Map.of()), pod("w1", Map.of()));
    assertThat(message(podPolicy("paramKind: {apiVersion: v1, kind: ConfigMap}\nvalidations: [{expression: 'true'}]").validate(write)))
        .isEqualTo("failed to configure policy: paramKind: parameters are not supported by the lab's API server");
    assertThat(podPolicy("failurePolicy: Ignore\nparamKind: {apiVersion: v1, kind: ConfigMap}\nvalidations: [{expression: 'true'}]").validate(write)).isEmpty();
  }

  @Test
  void noPoliciesIsEmptyAndAllowsEverything() {
    assertThat(ValidatingPolicies.NONE.isEmpty()).isTrue();
    assertThat(compile(List.of()).isEmpty()).isTrue();
    assertThat(fixture.isEmpty()).isFalse();
  }
}
