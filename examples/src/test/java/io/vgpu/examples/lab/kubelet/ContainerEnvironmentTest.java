package io.vgpu.examples.lab.kubelet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A container's environment as kubelet makes it from the pod spec: envFrom then env, later wins, {@code
 * $(VAR)} from what is defined so far, ConfigMap references optional or not, the downward API. The
 * expected environments are golden: every variable, in kubelet's order.
 */
class ContainerEnvironmentTest {
  private static final ContainerEnvironment.PodPlace PLACE = new ContainerEnvironment.PodPlace("worker1", "10.0.0.1", "10.1.0.7");
  private static final Map<String, String> SERVICE = Map.of("KUBERNETES_SERVICE_HOST", "127.0.0.1");
  private static final Map<String, Map<String, String>> CONFIG_MAPS = Map.of(
      "tenants/caps", ordered("CUDA_DEVICE_MEMORY_LIMIT", "20889m", "SHARED", "from-caps", "bad key", "x"),
      "tenants/more", ordered("SHARED", "from-more", "ONLY_MORE", "1"));
  private static final ContainerEnvironment.ConfigMaps LOOKUP = (ns, name) -> Optional.ofNullable(CONFIG_MAPS.get(ns + "/" + name));

  private static Map<String, String> ordered(String... kv) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  private static Pod pod(String container) {
    return PodJson.mapper().readValue("""
        {"metadata": {"name": "p1", "namespace": "tenants", "uid": "u-1", "labels": {"team": "vision"}, "annotations": {"gpu-fraction": "0.5"}},
         "spec": {"serviceAccountName": "runner", "containers": [%s]}}
        """.formatted(container), Pod.class);
  }

  private static ContainerEnvironment.Resolved resolve(Pod pod) throws ContainerConfigException {
    Container c = pod.getSpec().getContainers().get(0);
    return ContainerEnvironment.resolve(pod, c, PLACE, LOOKUP, SERVICE);
  }

  @Test
  void envFromThenEnvLaterWinsAndExpansionSeesWhatCameBefore() throws ContainerConfigException {
    Pod pod = pod("""
        {"name": "app", "envFrom": [{"configMapRef": {"name": "caps"}}, {"prefix": "M_", "configMapRef": {"name": "more"}},
                                     {"configMapRef": {"name": "more"}}, {"configMapRef": {"name": "gone", "optional": true}}],
         "env": [{"name": "UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                 {"name": "DIR", "value": "$(UID)_app/$(SHARED)/$(KUBERNETES_SERVICE_HOST)/$(LATER)/$$(UID)/$"},
                 {"name": "LATER", "value": "x"},
                 {"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "99999m"},
                 {"name": "LIMIT", "valueFrom": {"configMapKeyRef": {"name": "caps", "key": "CUDA_DEVICE_MEMORY_LIMIT"}}},
                 {"name": "GONE", "valueFrom": {"configMapKeyRef": {"name": "caps", "key": "nope", "optional": true}}},
                 {"name": "EMPTY"}]}
        """);
    ContainerEnvironment.Resolved resolved = resolve(pod);
    assertThat(resolved.env()).containsExactly(
        Map.entry("M_SHARED", "from-more"),
        Map.entry("M_ONLY_MORE", "1"),
        Map.entry("SHARED", "from-more"),
        Map.entry("ONLY_MORE", "1"),
        Map.entry("UID", "u-1"),
        Map.entry("DIR", "u-1_app/from-more/127.0.0.1/$(LATER)/$(UID)/$"),
        Map.entry("LATER", "x"),
        Map.entry("CUDA_DEVICE_MEMORY_LIMIT", "99999m"),
        Map.entry("LIMIT", "20889m"),
        Map.entry("EMPTY", ""),
        Map.entry("KUBERNETES_SERVICE_HOST", "127.0.0.1"));
    assertThat(resolved.invalidNames()).containsExactly("tenants/caps: bad key");
  }

  @Test
  void theDownwardApiReadsThePodAndItsPlace() throws ContainerConfigException {
    Pod pod = pod("""
        {"name": "app", "env": [
          {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
          {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
          {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['team']"}}},
          {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['gpu-fraction']"}}},
          {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['none']"}}},
          {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
          {"name": "G", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
          {"name": "H", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
          {"name": "I", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]}
        """);
    assertThat(resolve(pod).env()).containsExactly(
        Map.entry("A", "p1"), Map.entry("B", "tenants"), Map.entry("C", "vision"), Map.entry("D", "0.5"), Map.entry("E", ""),
        Map.entry("F", "worker1"), Map.entry("G", "runner"), Map.entry("H", "10.0.0.1"), Map.entry("I", "10.1.0.7"),
        Map.entry("KUBERNETES_SERVICE_HOST", "127.0.0.1"));
  }

  @Test
  void theContainersOwnServiceVariableWins() throws ContainerConfigException {
    Pod pod = pod("""
        {"name": "app", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "mine"}]}
        """);
    assertThat(resolve(pod).env()).containsExactly(Map.entry("KUBERNETES_SERVICE_HOST", "mine"));
  }

  @Test
  void aMissingRequiredConfigMapOrKeyIsKubeletsConfigurationError() {
    assertThatThrownBy(() -> resolve(pod("""
        {"name": "app", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}]}
        """))).isInstanceOf(ContainerConfigException.class).hasMessage("configmap \"gone\" not found");
    assertThatThrownBy(() -> resolve(pod("""
        {"name": "app", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "caps", "key": "k", "optional": false}}}]}
        """))).isInstanceOf(ContainerConfigException.class).hasMessage("couldn't find key k in ConfigMap tenants/caps");
    assertThatThrownBy(() -> resolve(pod("""
        {"name": "app", "envFrom": [{"configMapRef": {"name": "gone"}}]}
        """))).isInstanceOf(ContainerConfigException.class).hasMessage("configmap \"gone\" not found");
    assertThatThrownBy(() -> resolve(pod("""
        {"name": "app", "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers"}}}]}
        """))).isInstanceOf(ContainerConfigException.class).hasMessage("unsupported fieldPath: spec.containers");
  }

  @Test
  void expansionFollowsKubeletsRules() {
    Map<String, String> vars = Map.of("A", "1", "EMPTY", "");
    assertThat(EnvExpansion.expand("$(A)$(EMPTY)|$(B)|$$(A)|$$$(A)|$A|$(A|$", vars)).isEqualTo("1|$(B)|$(A)|$1|$A|$(A|$");
    assertThat(EnvExpansion.expand("$()", vars)).isEqualTo("$()");
  }
}
