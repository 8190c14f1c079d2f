package io.vgpu.examples.lab.apiserver;

import static io.vgpu.examples.lab.apiserver.ValidatingPoliciesTest.AGENT_W1;
import static io.vgpu.examples.lab.apiserver.ValidatingPoliciesTest.ALLOCATED;
import static io.vgpu.examples.lab.apiserver.ValidatingPoliciesTest.SCHEDULER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.BindingBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicy;
import io.fabric8.kubernetes.api.model.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.PodResource;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.k8s.pod.PodJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.ThrowableAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * Identities and admission over HTTP with fabric8's clients, each holding its own user's token: the
 * fixture policies applied to every write verb, from every user, and nothing stored when denied.
 */
class IdentityAndAdmissionTest {
  private static final String DENIED_GRANT =
      "pods \"p1\" is forbidden: ValidatingAdmissionPolicy 'test-scheduler-owned' with binding 'test-scheduler-owned-binding' denied request: only vgpu may change "
          + ALLOCATED;
  private static final String GRANT = "GPU-a,NVIDIA,1024,10:;";

  private final ApiServerStandIn api = ApiServerStandIn.start();
  private final List<KubernetesClient> clients = new ArrayList<>();
  private KubernetesClient admin;
  private KubernetesClient tenant;
  private KubernetesClient scheduler;
  private KubernetesClient agent;
  @TempDir Path temp;

  private KubernetesClient client(UserInfo user) {
    KubernetesClient c = api.client(user);
    clients.add(c);
    return c;
  }

  @BeforeEach
  void cluster() {
    admin = client(UserInfo.ADMIN);
    tenant = client(UserInfo.TENANT);
    scheduler = client(SCHEDULER);
    agent = client(AGENT_W1);
    admin.namespaces().resource(new NamespaceBuilder().withNewMetadata().withName("team-a").endMetadata().build()).create();
    for (String name : List.of("w1", "w2")) {
      admin.nodes().resource(new NodeBuilder().withNewMetadata().withName(name).endMetadata().build()).create();
    }
    store(ValidatingPoliciesTest.fixtureObjects());
    admin.pods().inNamespace("team-a").resource(pod("p1", Map.of(ALLOCATED, GRANT))).create();
    bind(admin, "p1", "w1");
  }

  @AfterEach
  void stop() {
    clients.forEach(KubernetesClient::close);
    api.close();
  }

  private void store(List<JsonNode> objects) {
    for (JsonNode o : objects) {
      if (o.path("kind").asString().equals("ValidatingAdmissionPolicy")) {
        admin.admissionRegistration().v1().validatingAdmissionPolicies().resource(PodJson.mapper().treeToValue(o, ValidatingAdmissionPolicy.class)).create();
      } else {
        admin.admissionRegistration().v1().validatingAdmissionPolicyBindings().resource(PodJson.mapper().treeToValue(o, ValidatingAdmissionPolicyBinding.class)).create();
      }
    }
  }

  private void store(String yaml) {
    try (var it = YAMLMapper.builder().build().readerFor(JsonNode.class).<JsonNode>readValues(yaml)) {
      store(it.readAll());
    }
  }

  private static Pod pod(String name, Map<String, String> annotations) {
    return new PodBuilder().withNewMetadata().withName(name).withNamespace("team-a").withAnnotations(annotations).addToLabels("app", "train").endMetadata()
        .withNewSpec().addNewContainer().withName("c").withImage("i").endContainer().endSpec().build();
  }

  private static void bind(KubernetesClient client, String pod, String node) {
    client.bindings().inNamespace("team-a").resource(new BindingBuilder().withNewMetadata().withName(pod).endMetadata().withNewTarget().withKind("Node").withName(node).endTarget().build())
        .create();
  }

  private PodResource p1(KubernetesClient client) {
    return client.pods().inNamespace("team-a").withName("p1");
  }

  private Pod stored() {
    return p1(admin).get();
  }

  private static void refused(ThrowableAssert.ThrowingCallable write, int code, String message) {
    assertThatThrownBy(write).isInstanceOf(KubernetesClientException.class).satisfies(e -> {
      KubernetesClientException k = (KubernetesClientException) e;
      assertThat(k.getCode()).isEqualTo(code);
      assertThat(k.getStatus().getMessage()).isEqualTo(message);
    });
  }

  // --- authentication

  @Test
  void aRequestWithoutATokenTheServerIssuedIs401() {
    for (String token : new String[] {"forged", null}) {
      ConfigBuilder config = new ConfigBuilder().withMasterUrl(api.url()).withRequestTimeout(5_000);
      if (token != null) {
        config.withOauthToken(token);
      }
      try (KubernetesClient stranger = new KubernetesClientBuilder().withConfig(config.build()).build()) {
        assertThatThrownBy(() -> stranger.pods().inNamespace("team-a").list()).isInstanceOf(KubernetesClientException.class)
            .satisfies(e -> assertThat(((KubernetesClientException) e).getCode()).isEqualTo(401));
      }
    }
  }

  @Test
  void aKubeconfigCarriesItsUsersTokenAndOnlyItsOwnerReadsIt() throws Exception {
    Path file = api.writeKubeconfig(temp.resolve("kubeconfig"), AGENT_W1);
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    try (KubernetesClient fromFile = new KubernetesClientBuilder().withConfig(io.fabric8.kubernetes.client.Config.fromKubeconfig(Files.readString(file))).build()) {
      fromFile.nodes().withName("w1").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}");
      // the same user as AGENT_W1: w2 is not its node
      refused(() -> fromFile.nodes().withName("w2").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}"), 422,
          "nodes \"w2\" is forbidden: ValidatingAdmissionPolicy 'test-node-agent' with binding 'test-node-agent-binding' denied request: a node agent may write only its own Node, w1");
    }
  }

  @Test
  void aPodsServiceAccountTokenAuthenticatesAsItsServiceAccountWithTheNodeClaim() {
    store("""
        kind: ValidatingAdmissionPolicy
        apiVersion: admissionregistration.k8s.io/v1
        metadata: {name: who}
        spec:
          matchConstraints:
            resourceRules:
              - {apiGroups: [""], apiVersions: [v1], operations: [UPDATE], resources: [pods]}
          validations:
            - expression: "false"
              messageExpression: "request.userInfo.username + ' in ' + request.userInfo.groups.join(',') + ' on ' + request.userInfo.extra['authentication.kubernetes.io/node-name'][0]"
        ---
        kind: ValidatingAdmissionPolicyBinding
        apiVersion: admissionregistration.k8s.io/v1
        metadata: {name: who}
        spec: {policyName: who, validationActions: [Deny]}
        """);
    String token = api.serviceAccountToken("team-a", "runner", "w1");
    assertThat(api.serviceAccountToken("team-a", "runner", "w1")).isEqualTo(token);
    assertThat(api.serviceAccountToken("team-a", "runner", "w2")).isNotEqualTo(token);
    // as a process in the pod uses it: the bearer token read from its file, the address from the Service's variables
    try (KubernetesClient pod = new KubernetesClientBuilder().withConfig(new ConfigBuilder().withMasterUrl("http://127.0.0.1:" + api.port()).withOauthToken(token)
        .withRequestTimeout(5_000).build()).build()) {
      refused(() -> pod.pods().inNamespace("team-a").withName("p1").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}"), 422,
          "pods \"p1\" is forbidden: ValidatingAdmissionPolicy 'who' with binding 'who' denied request: system:serviceaccount:team-a:runner in "
              + "system:serviceaccounts,system:serviceaccounts:team-a,system:authenticated on w1");
    }
  }

  // --- every write verb

  @Test
  void aTenantsMergePatchOfAGrantIsRefusedAndNothingIsStored() {
    String version = stored().getMetadata().getResourceVersion();
    refused(() -> p1(tenant).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"" + ALLOCATED + "\":\"GPU-b,NVIDIA,40960,100:;\"}}}"), 422,
        DENIED_GRANT);
    refused(() -> p1(tenant).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"" + ALLOCATED + "\":null}}}"), 422, DENIED_GRANT);
    assertThat(stored().getMetadata().getAnnotations()).containsEntry(ALLOCATED, GRANT);
    assertThat(stored().getMetadata().getResourceVersion()).isEqualTo(version);
  }

  @Test
  void aTenantsOtherChangesGoThroughAndANullRemovesTheKey() {
    p1(tenant).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"team\":\"a\"},\"labels\":{\"app\":null}}}");
    assertThat(stored().getMetadata().getAnnotations()).containsEntry("team", "a").containsEntry(ALLOCATED, GRANT);
    assertThat(stored().getMetadata().getLabels()).doesNotContainKey("app");
  }

  @Test
  void everyWriteVerbIsAdmittedForEveryUser() {
    // replacement (PUT)
    Pod changed = stored();
    changed.getMetadata().getAnnotations().put(ALLOCATED, "GPU-b,NVIDIA,40960,100:;");
    refused(() -> tenant.pods().inNamespace("team-a").resource(changed).update(), 422, DENIED_GRANT);
    // JSON patch (fabric8's edit)
    refused(() -> p1(tenant).edit(p -> new PodBuilder(p).editMetadata().addToAnnotations(ALLOCATED, "x").endMetadata().build()), 422, DENIED_GRANT);
    // strategic merge patch
    refused(() -> p1(tenant).patch(PatchContext.of(PatchType.STRATEGIC_MERGE), "{\"metadata\":{\"annotations\":{\"" + ALLOCATED + "\":\"x\"}}}"), 422, DENIED_GRANT);
    // the status subresource, which may change metadata
    refused(() -> p1(tenant).subresource("status").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"" + ALLOCATED + "\":\"x\"}}}"),
        422, DENIED_GRANT);
    assertThat(stored().getMetadata().getAnnotations()).containsEntry(ALLOCATED, GRANT);

    // the scheduler may, by each verb
    p1(scheduler).patch(PatchContext.of(PatchType.STRATEGIC_MERGE), "{\"metadata\":{\"annotations\":{\"" + ALLOCATED + "\":\"s1\"}}}");
    p1(scheduler).edit(p -> new PodBuilder(p).editMetadata().addToAnnotations(ALLOCATED, "s2").endMetadata().build());
    Pod byScheduler = stored();
    byScheduler.getMetadata().getAnnotations().put(ALLOCATED, "s3");
    scheduler.pods().inNamespace("team-a").resource(byScheduler).update();
    assertThat(stored().getMetadata().getAnnotations()).containsEntry(ALLOCATED, "s3");
  }

  @Test
  void aStatusWriteKeepsTheSpecAndMergesConditionsByType() {
    KubernetesClient kubelet = client(UserInfo.node("w1"));
    p1(kubelet).subresource("status").patch(PatchContext.of(PatchType.STRATEGIC_MERGE),
        "{\"spec\":{\"nodeName\":\"w2\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    Pod pod = stored();
    assertThat(pod.getStatus().getPhase()).isEqualTo("Running");
    assertThat(pod.getStatus().getConditions()).extracting(c -> c.getType() + "=" + c.getStatus()).containsExactly("PodScheduled=True", "Ready=True");
    assertThat(pod.getSpec().getNodeName()).as("a status write does not move the pod").isEqualTo("w1");
  }

  @Test
  void aNodeAgentWritesItsNodesPodsAndNoOthers() {
    p1(agent).patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"hami.io/bind-phase\":\"success\"}}}");
    admin.pods().inNamespace("team-a").resource(pod("p2", Map.of())).create();
    bind(admin, "p2", "w2");
    refused(() -> agent.pods().inNamespace("team-a").withName("p2").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}"),
        422, "pods \"p2\" is forbidden: ValidatingAdmissionPolicy 'test-node-agent' with binding 'test-node-agent-binding' denied request: a node agent may write only pods bound to w1");
    Node w1 = admin.nodes().withName("w1").get();
    w1.getMetadata().setAnnotations(Map.of("hami.io/node-nvidia-register", "x"));
    agent.nodes().resource(w1).update();
    try (KubernetesClient unbound = api.client(UserInfo.serviceAccount("kube-system", "hami-device-plugin"))) {
      refused(() -> unbound.nodes().withName("w1").patch(PatchContext.of(PatchType.JSON_MERGE), "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}"), 422,
          "nodes \"w1\" is forbidden: ValidatingAdmissionPolicy 'test-node-agent' with binding 'test-node-agent-binding' denied request: the node agent's token carries no node-name claim");
    }
  }

  @Test
  void createsBindingsAndDeletesAreAdmittedToo() {
    store("""
        kind: ValidatingAdmissionPolicy
        apiVersion: admissionregistration.k8s.io/v1
        metadata: {name: z-rules}
        spec:
          matchConstraints:
            resourceRules:
              - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods, bindings, pods/binding]}
              - {apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}
          validations:
            - expression: "request.operation != 'CREATE' || request.kind.kind != 'Pod' || object.metadata.name != 'forbidden'"
              message: no pod named forbidden
            - expression: "request.kind.kind != 'Binding' || object.target.name != 'w2'"
              messageExpression: "'no binding to ' + object.target.name + ' by ' + request.userInfo.username"
            - expression: "request.operation != 'DELETE' || !has(oldObject.metadata.annotations) || !('keep' in oldObject.metadata.annotations)"
              message: kept
        ---
        kind: ValidatingAdmissionPolicyBinding
        apiVersion: admissionregistration.k8s.io/v1
        metadata: {name: z-rules}
        spec: {policyName: z-rules, validationActions: [Deny]}
        """);
    refused(() -> tenant.pods().inNamespace("team-a").resource(pod("forbidden", Map.of())).create(), 422,
        "pods \"forbidden\" is forbidden: ValidatingAdmissionPolicy 'z-rules' with binding 'z-rules' denied request: no pod named forbidden");
    assertThat(tenant.pods().inNamespace("team-a").withName("forbidden").get()).isNull();

    tenant.pods().inNamespace("team-a").resource(pod("p3", Map.of("keep", "yes"))).create();
    refused(() -> bind(scheduler, "p3", "w2"), 422,
        "bindings \"p3\" is forbidden: ValidatingAdmissionPolicy 'z-rules' with binding 'z-rules' denied request: no binding to w2 by system:serviceaccount:kube-system:hami-scheduler");
    assertThat(tenant.pods().inNamespace("team-a").withName("p3").get().getSpec().getNodeName()).isNull();
    bind(scheduler, "p3", "w1");

    refused(() -> tenant.pods().inNamespace("team-a").withName("p3").delete(), 422,
        "pods \"p3\" is forbidden: ValidatingAdmissionPolicy 'z-rules' with binding 'z-rules' denied request: kept");
    assertThat(tenant.pods().inNamespace("team-a").withName("p3").get()).isNotNull();

    // a binding removed takes its policy's effect with it
    admin.admissionRegistration().v1().validatingAdmissionPolicyBindings().withName("z-rules").delete();
    tenant.pods().inNamespace("team-a").withName("p3").delete();
    assertThat(tenant.pods().inNamespace("team-a").withName("p3").get()).isNull();
  }
}
