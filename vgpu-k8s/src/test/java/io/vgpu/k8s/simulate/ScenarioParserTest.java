package io.vgpu.k8s.simulate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.Device;
import io.vgpu.api.PodRef;
import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlReader;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ScenarioParserTest {
  private final ScenarioParser parser = new ScenarioParser(Set.of());

  private Scenario parse(String yaml) {
    return parser.parse(YamlReader.read(yaml, "s.yaml"));
  }

  private void fails(String yaml, String message) {
    assertThatThrownBy(() -> parse(yaml)).isInstanceOf(InputException.class).hasMessage(message);
  }

  @Test
  void anEmptyScenarioHasHamisDefaults() {
    Scenario s = parse("events: []\n");
    assertThat(s.config()).isEqualTo(DeviceConfig.DEFAULT);
    assertThat(s.nodes()).isEmpty();
    assertThat(s.quotas()).isEmpty();
  }

  @Test
  void profileNodesGetTheDefaultUuidPrefixOfTheirPositionAndTheHostnameLabel() {
    Scenario s = parse("nodes:\n  - {name: a}\n  - {name: b, gpus: {profile: T4, count: 2, numa: 1}}\n");
    NodeSpec b = s.nodes().get(1);
    assertThat(b.devices())
        .containsExactly(
            new Device("GPU-00000001-0000-0000-0000-000000000000", 0, "Tesla T4", 15360, 1, true, "00000000:01:00.0"),
            new Device("GPU-00000001-0000-0000-0000-000000000001", 1, "Tesla T4", 15360, 1, true, "00000000:02:00.0"));
    assertThat(b.labels()).containsEntry("kubernetes.io/hostname", "b");
    assertThat(s.nodes().get(0).devices()).isEmpty();
  }

  @Test
  void explicitDevicesDefaultToHealthyAtTheirListPosition() {
    Scenario s =
        parse(
            "nodes:\n  - name: w\n    annotations: {hami.io/device-cordon: \"GPU-b, \"}\n    devices:\n"
                + "      - {uuid: GPU-a, model: NVIDIA L4, memoryMiB: 23034}\n"
                + "      - {uuid: GPU-b, model: NVIDIA L4, memoryMiB: 23034, numa: 1, health: false, index: 7}\n");
    assertThat(s.nodes().get(0).devices())
        .containsExactly(new Device("GPU-a", 0, "NVIDIA L4", 23034, 0, true, ""), new Device("GPU-b", 7, "NVIDIA L4", 23034, 1, false, ""));
    assertThat(s.nodes().get(0).cordoned()).containsExactly("GPU-b");
  }

  @Test
  void refusesInconsistentNodes() {
    fails("nodes: [{name: a}, {name: a}]\n", "s.yaml:1:27: nodes[1].name: node 'a' is listed twice");
    fails(
        "nodes:\n  - {name: a, gpus: {profile: T4, uuidPrefix: GPU-x}}\n  - {name: b, gpus: {profile: T4, uuidPrefix: GPU-x}}\n",
        "s.yaml:3:5: nodes[1]: device GPU-x00 is also on node a");
    fails("nodes: [{name: a, gpus: {profile: T4}, devices: []}]\n", "s.yaml:1:9: nodes[0]: give either gpus or devices, not both");
    fails("nodes: [{name: a, gpus: {profile: T4, count: 101}}]\n", "s.yaml:1:46: nodes[0].gpus.count: 101 is out of range [0, 100]");
    fails("nodes: [{name: a, devices: [{uuid: x, model: m}]}]\n", "s.yaml:1:29: nodes[0].devices[0]: missing required key 'memoryMiB'");
  }

  @Test
  void readsQuotasMergingPerNamespaceAndIgnoringKeysHamiDoesNotTrack() {
    Scenario s =
        parse(
            "resourceQuotas:\n"
                + "  - {namespace: a, hard: {limits.nvidia.com/gpumem: \"20000\", limits.nvidia.com/gpu: 4, pods: 10}}\n"
                + "  - {namespace: a, name: cores, hard: {limits.nvidia.com/gpucores: 200}}\n"
                + "  - {namespace: b, hard: {limits.nvidia.com/gpumem: 1Ki}}\n");
    assertThat(s.quotas()).containsExactly(Map.entry("a", new QuotaLimits(20000, 200)), Map.entry("b", new QuotaLimits(1024, QuotaLimits.UNLIMITED)));
  }

  @Test
  void refusesQuotaValuesThatAreNotWholeNumbers() {
    fails("resourceQuotas: [{namespace: a, hard: {limits.nvidia.com/gpumem: 1.5}}]\n",
        "s.yaml:1:66: resourceQuotas[0].hard.limits.nvidia.com/gpumem: '1.5' must be a non-negative whole number");
    fails("resourceQuotas: [{namespace: a, hard: {pods: lots}}]\n", "s.yaml:1:46: resourceQuotas[0].hard.pods: 'lots' is not a valid quantity");
  }

  @Test
  void readsEventsAndAppliesSetConfigCumulatively() {
    Scenario s =
        parse(
            "config: {deviceSplitCount: 4}\nevents:\n"
                + "  - create: {metadata: {name: p, namespace: ns}, spec: {containers: [{name: c}]}}\n"
                + "  - delete: p\n"
                + "  - delete: ns/p\n"
                + "  - setConfig: {deviceMemoryScaling: 2}\n"
                + "  - setConfig: {nodeSchedulerPolicy: spread}\n");
    assertThat(s.events()).extracting(ScenarioEvent::describe)
        .containsExactly("create ns/p", "delete default/p", "delete ns/p", "setConfig deviceMemoryScaling=2", "setConfig nodeSchedulerPolicy=spread");
    ScenarioEvent.SetConfig last = (ScenarioEvent.SetConfig) s.events().get(4);
    assertThat(last.config().deviceSplitCount()).isEqualTo(4);
    assertThat(last.config().deviceMemoryScaling()).isEqualTo(2.0);
    assertThat(last.config().nodeSchedulerPolicy()).isEqualTo("spread");
    assertThat(((ScenarioEvent.Create) s.events().get(0)).ref()).isEqualTo(new PodRef("ns", "p"));
    assertThat(s.events().get(1).position()).hasToString("s.yaml:4:5");
  }

  @Test
  void refusesMalformedEvents() {
    fails("events: [{create: {}, delete: p}]\n", "s.yaml:1:10: events[0]: an event has exactly one of create, delete, patch, setConfig, restart, wait, scrape");
    fails("events: [{reboot: p}]\n", "s.yaml:1:11: unknown key 'reboot' in events[0] (known keys: create, delete, patch, setConfig, restart, wait, scrape)");
    fails("events: [{restart: kubelet}]\n", "s.yaml:1:20: events[0].restart: 'kubelet' is not a component (scheduler, or device-plugin/<node>)");
    fails("nodes: [{name: w1}]\nevents: [{restart: device-plugin/w2}]\n",
        "s.yaml:2:20: events[0].restart: 'device-plugin/w2' names no node of the scenario (nodes: w1)");
    fails("events: [{wait: -1}]\n", "s.yaml:1:17: events[0].wait: -1 is not a number of seconds between 0 and 3600");
    fails("events: [{wait: soon}]\n", "s.yaml:1:17: events[0].wait: expected a number, got 'soon'");
    fails("events: [{scrape: {node: w1}}]\n", "s.yaml:1:19: events[0].scrape: takes no arguments (write scrape: {})");
    fails("events: [{delete: a/b/}]\n", "s.yaml:1:19: events[0].delete: 'a/b/' is not a pod name or namespace/name");
    fails("events: [{delete: /b}]\n", "s.yaml:1:19: events[0].delete: '/b' is not a pod name or namespace/name");
    fails("events: [{create: {kind: Node, metadata: {name: n}}}]\n", "s.yaml:1:26: events[0].create.kind: expected Pod, Queue or PodGroup, got 'Node'");
    fails("events: [{create: {spec: {containers: []}}}]\n", "s.yaml:1:19: events[0].create: missing required key 'metadata'");
    fails("events: [{setConfig: {deviceSplitCount: x}}]\n", "s.yaml:1:41: events[0].setConfig.deviceSplitCount: expected a whole number, got 'x'");
  }

  @Test
  void readsTheLabsEventsAndKeepsChecksForIt() {
    Scenario s =
        parse("nodes: [{name: w1}]\nevents:\n  - restart: scheduler\n  - restart: device-plugin/w1\n  - wait: 1.5\n  - scrape: {}\n  - scrape:\n"
            + "checks:\n  - {name: c, path: pods, count: 0}\n");
    assertThat(s.events()).extracting(ScenarioEvent::describe)
        .containsExactly("restart scheduler", "restart device-plugin/w1", "wait 1.5", "scrape", "scrape");
    assertThat(((ScenarioEvent.Wait) s.events().get(2)).duration()).hasMillis(1500);
    assertThat(s.checks()).hasValueSatisfying(c -> assertThat(c.items()).hasSize(1));
    assertThat(parse("events: []\n").checks()).isEmpty();
  }

  @Test
  void readsPatchesWithTheirUserAndNullsThatRemoveKeys() {
    Scenario s =
        parse("events:\n"
            + "  - patch: {pod: team-a/p1, metadata: {annotations: {hami.io/vgpu-devices-allocated: 'GPU-a,NVIDIA,40960,100:;', gone: null}}}\n"
            + "  - patch:\n      pod: p2\n      as: system:serviceaccount:kube-system:hami-device-plugin\n      metadata: {labels: {hami.io/vgpu-node: w2, n: 1}}\n");
    assertThat(s.events()).extracting(ScenarioEvent::describe)
        .containsExactly("patch team-a/p1 as tenant", "patch default/p2 as system:serviceaccount:kube-system:hami-device-plugin");
    ScenarioEvent.Patch first = (ScenarioEvent.Patch) s.events().get(0);
    assertThat(first.ref()).isEqualTo(new PodRef("team-a", "p1"));
    assertThat(first.annotations()).containsExactly(Map.entry("hami.io/vgpu-devices-allocated", Optional.of("GPU-a,NVIDIA,40960,100:;")), Map.entry("gone", Optional.empty()));
    assertThat(first.labels()).isEmpty();
    assertThat(first.position()).hasToString("s.yaml:2:5");
    ScenarioEvent.Patch second = (ScenarioEvent.Patch) s.events().get(1);
    assertThat(second.labels()).containsExactly(Map.entry("hami.io/vgpu-node", Optional.of("w2")), Map.entry("n", Optional.of("1")));
  }

  @Test
  void refusesMalformedPatches() {
    fails("events: [{patch: {metadata: {labels: {a: b}}}}]\n", "s.yaml:1:18: events[0].patch: missing required key 'pod'");
    fails("events: [{patch: {pod: a/b/c, metadata: {labels: {a: b}}}}]\n", "s.yaml:1:24: events[0].patch.pod: 'a/b/c' is not a pod name or namespace/name");
    fails("events: [{patch: {pod: p, as: bob, metadata: {labels: {a: b}}}}]\n",
        "s.yaml:1:31: events[0].patch.as: 'bob' is not a user of the lab (tenant, or system:serviceaccount:NAMESPACE:NAME)");
    fails("events: [{patch: {pod: p, as: 'system:serviceaccount:kube-system', metadata: {labels: {a: b}}}}]\n",
        "s.yaml:1:31: events[0].patch.as: 'system:serviceaccount:kube-system' is not a user of the lab (tenant, or system:serviceaccount:NAMESPACE:NAME)");
    fails("events: [{patch: {pod: p, metadata: {spec: {}}}}]\n", "s.yaml:1:38: unknown key 'spec' in events[0].patch.metadata (known keys: annotations, labels)");
    fails("events: [{patch: {pod: p, user: tenant, metadata: {labels: {a: b}}}}]\n",
        "s.yaml:1:27: unknown key 'user' in events[0].patch (known keys: pod, as, metadata)");
    fails("events: [{patch: {pod: p, metadata: {annotations: {}}}}]\n",
        "s.yaml:1:37: events[0].patch.metadata: changes no annotation or label (write annotations: {KEY: VALUE} or labels:, a null VALUE removes the key)");
    fails("events: [{patch: {pod: p, metadata: {annotations: {a: [1]}}}}]\n", "s.yaml:1:55: events[0].patch.metadata.annotations.a: expected a single value, got a list");
  }

  @Test
  void acceptsAnyPodFieldButChecksQuantitiesOfEveryContainer() {
    Scenario s =
        parse(
            "events:\n  - create:\n      apiVersion: v1\n      kind: Pod\n      metadata: {name: p, labels: {app: x}}\n"
                + "      spec: {priorityClassName: high, tolerations: [{operator: Exists}], containers: [{name: c, image: busybox}]}\n");
    assertThat(((ScenarioEvent.Create) s.events().get(0)).pod().getSpec().getPriorityClassName()).isEqualTo("high");
    fails(
        "events: [{create: {metadata: {name: p}, spec: {initContainers: [{name: i, resources: {requests: {cpu: 1x}}}], containers: [{name: c}]}}}]\n",
        "s.yaml:1:103: events[0].create.spec.initContainers[0].resources.requests.cpu: '1x' is not a valid quantity");
  }

  @Test
  void readsJsonScenarios() {
    Scenario s = parser.parse(YamlReader.read("{\"nodes\": [{\"name\": \"w\", \"gpus\": {\"profile\": \"H200\"}}]}", "s.json"));
    assertThat(s.nodes().get(0).devices()).extracting(Device::memoryMiB).containsExactly(143771L);
  }

  @Test
  void podsAndConfigsMayShareValuesThroughAnchorsAliasesAndMergeKeys() {
    Scenario s =
        parse(
            "config: &cfg {deviceSplitCount: 4}\n"
                + "events:\n"
                + "  - create: {metadata: {name: a}, spec: {containers: [&gpu {name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 4096}}}]}}\n"
                + "  - create:\n"
                + "      metadata: {name: b}\n"
                + "      spec:\n"
                + "        containers:\n"
                + "          - <<: *gpu\n"
                + "            name: d\n"
                + "  - setConfig: {<<: *cfg, deviceMemoryScaling: 2}\n");
    var a = ((ScenarioEvent.Create) s.events().get(0)).pod().getSpec().getContainers().get(0);
    assertThat(a.getResources().getLimits().get("nvidia.com/gpumem")).hasToString("4096");
    var b = ((ScenarioEvent.Create) s.events().get(1)).pod().getSpec().getContainers().get(0);
    assertThat(b.getName()).isEqualTo("d");
    assertThat(b.getImage()).isEqualTo("busybox");
    ScenarioEvent.SetConfig set = (ScenarioEvent.SetConfig) s.events().get(2);
    assertThat(set.config().deviceSplitCount()).isEqualTo(4);
    assertThat(set.config().deviceMemoryScaling()).isEqualTo(2.0);
    // A bad quantity used through an alias is reported where it was written (its anchor starts the value).
    fails(
        "events:\n  - create: {metadata: {name: a}, spec: {containers: [{name: c, image: &q 4Zi}]}}\n"
            + "  - create: {metadata: {name: b}, spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpumem: *q}}}]}}\n",
        "s.yaml:2:72: events[1].create.spec.containers[0].resources.limits.nvidia.com/gpumem: '4Zi' is not a valid quantity");
  }
}
