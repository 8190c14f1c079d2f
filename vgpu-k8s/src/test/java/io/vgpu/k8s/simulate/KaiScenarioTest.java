package io.vgpu.k8s.simulate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.vgpu.api.PodRef;
import io.vgpu.core.Engine;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.YamlReader;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A scenario's {@code stack}, {@code queues} and KAI objects, as SCENARIO.md's "Queues and KAI's pod dialect" defines them. */
class KaiScenarioTest {
  private final ScenarioParser parser = new ScenarioParser(Set.of());

  private Scenario parse(String yaml) {
    return parser.parse(YamlReader.read(yaml, "s.yaml"));
  }

  private void fails(String yaml, String message) {
    assertThatThrownBy(() -> parse(yaml)).isInstanceOf(InputException.class).hasMessage(message);
  }

  @Test
  void theStackIsVgpuUnlessItSaysKai() {
    assertThat(parse("events: []\n").stack()).isEqualTo(Stack.VGPU);
    assertThat(parse("stack: kai\n").stack()).isEqualTo(Stack.KAI);
    fails("stack: volcano\n", "s.yaml:1:8: stack: 'volcano' is not vgpu or kai");
  }

  @Test
  void queuesTakeKaisDefaultsForAbsentFields() {
    Scenario s =
        parse(
            "queues:\n"
                + "  - metadata: {name: default}\n"
                + "    spec:\n"
                + "      resources:\n"
                + "        gpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n"
                + "  - apiVersion: scheduling.run.ai/v2\n"
                + "    kind: Queue\n"
                + "    metadata: {name: research}\n"
                + "    spec: {parentQueue: default, priority: 50, resources: {cpu: {quota: 4000}}}\n");
    QueueSpec root = s.queues().get(0).spec();
    assertThat(root.name()).isEqualTo("default");
    assertThat(root.parent()).isEmpty();
    assertThat(root.priority()).isEqualTo(QueueSpec.DEFAULT_PRIORITY);
    assertThat(root.terms(QueueResource.GPU)).isEqualTo(new ResourceTerms(-1, -1, 1));
    assertThat(root.terms(QueueResource.GPU).quotaIsAll()).isTrue();
    assertThat(root.terms(QueueResource.CPU)).isEqualTo(ResourceTerms.NONE);
    QueueSpec leaf = s.queues().get(1).spec();
    assertThat(leaf.parent()).contains("default");
    assertThat(leaf.priority()).isEqualTo(50);
    assertThat(leaf.terms(QueueResource.CPU)).isEqualTo(new ResourceTerms(4000, 0, 0));
    assertThat(s.queues().get(1).manifest().getKind()).isEqualTo("Queue");
  }

  @Test
  void badQueuesAreNamedWithTheirField() {
    fails("queues:\n  - {metadata: {name: q}, spec: {resources: {gpu: {quota: -2}}}}\n", "s.yaml:2:59: queues[0].spec.resources.gpu.quota: -2 must be -1 or a number not below 0");
    fails("queues:\n  - {metadata: {name: q}, spec: {resources: {gpus: {}}}}\n", "s.yaml:2:46: unknown key 'gpus' in queues[0].spec.resources (known keys: gpu, cpu, memory)");
    fails("queues:\n  - {metadata: {name: q, namespace: ns}}\n", "s.yaml:2:37: queues[0].metadata.namespace: a Queue is cluster-scoped and has no namespace");
    fails("queues:\n  - {metadata: {name: q}, spec: {parentQueue: p}}\n", "s.yaml:2:5: queues: queue 'q' names parent 'p', which is not a queue of the scenario");
    fails("queues:\n  - {metadata: {name: q}}\n  - {metadata: {name: q}}\n", "s.yaml:3:5: queues: queue 'q' is listed twice");
    fails("queues:\n  - {kind: PodGroup, metadata: {name: q}}\n", "s.yaml:2:12: queues[0].kind: expected Queue, got 'PodGroup'");
    fails(
        "queues:\n  - {metadata: {name: a}, spec: {parentQueue: c}}\n  - {metadata: {name: b}, spec: {parentQueue: a}}\n  - {metadata: {name: c}, spec: {parentQueue: b}}\n",
        "s.yaml:2:5: queues: queue 'a' has a cycle of parents: a -> c -> b -> a");
    fails("queues:\n  - {metadata: {name: q}, spec: {resources: {gpu: {overQuotaWeight: -1}}}}\n", "s.yaml:2:69: queues[0].spec.resources.gpu.overQuotaWeight: -1 must not be negative");
  }

  @Test
  void eventsCreateAndDeleteQueuesAndPodGroups() {
    Scenario s =
        parse(
            "queues: [{metadata: {name: root}}]\n"
                + "events:\n"
                + "  - create: {kind: Queue, metadata: {name: team}, spec: {parentQueue: root}}\n"
                + "  - create: {apiVersion: scheduling.run.ai/v2alpha2, kind: PodGroup, metadata: {name: pg-train, namespace: ml}, spec: {minMember: 4, queue: team}}\n"
                + "  - create: {kind: PodGroup, metadata: {name: solo}}\n"
                + "  - delete: podgroup/ml/pg-train\n"
                + "  - delete: queue/team\n"
                + "  - delete: default/p\n");
    assertThat(s.events()).extracting(ScenarioEvent::describe)
        .containsExactly("create queue/team", "create podgroup/ml/pg-train", "create podgroup/default/solo", "delete podgroup/ml/pg-train", "delete queue/team", "delete default/p");
    ScenarioEvent.CreatePodGroup group = (ScenarioEvent.CreatePodGroup) s.events().get(1);
    assertThat(group.ref()).isEqualTo(new PodRef("ml", "pg-train"));
    assertThat(group.minMember()).isEqualTo(4);
    assertThat(group.queue()).contains("team");
    ScenarioEvent.CreatePodGroup solo = (ScenarioEvent.CreatePodGroup) s.events().get(2);
    assertThat(solo.minMember()).isEqualTo(1);
    assertThat(solo.queue()).isEqualTo(Optional.empty());
  }

  @Test
  void eventsAreCheckedAsTheyAreWritten() {
    fails("events:\n  - create: {kind: Queue, metadata: {name: t}, spec: {parentQueue: nobody}}\n", "s.yaml:2:5: create queue/t: parent 'nobody' is not a queue at that point of the scenario");
    fails("events:\n  - create: {kind: PodGroup, metadata: {name: g}, spec: {minMember: 0}}\n", "s.yaml:2:69: events[0].create.spec.minMember: 0 is out of range [1, 2147483647]");
    fails("events:\n  - create: {apiVersion: v1, kind: Queue, metadata: {name: t}}\n", "s.yaml:2:26: events[0].create.apiVersion: expected scheduling.run.ai/v2, got 'v1'");
    fails("events:\n  - delete: queue/a/b\n", "s.yaml:2:13: events[0].delete: 'queue/a/b' is not queue/NAME");
    fails(
        "queues: [{metadata: {name: a}}, {metadata: {name: b}, spec: {parentQueue: a}}]\nevents:\n  - create: {kind: Queue, metadata: {name: a}, spec: {parentQueue: b}}\n",
        "s.yaml:3:5: create queue/a: queue 'a' has a cycle of parents: a -> b -> a");
  }

  @Test
  void underKaiKaisPodsAreLeftToKai() {
    Scenario s =
        parse(
            "stack: kai\n"
                + "nodes: [{name: w, gpus: {profile: A100-SXM4-40GB, count: 1}}]\n"
                + "queues: [{metadata: {name: default-queue}, spec: {resources: {gpu: {quota: -1, limit: -1, overQuotaWeight: 1}}}}]\n"
                + "events:\n"
                + "  - create: {metadata: {name: half, labels: {kai.scheduler/queue: default-queue}, annotations: {gpu-memory: \"20480\"}}, spec: {schedulerName: kai-scheduler, containers: [{name: app}]}}\n");
    SimulationResult r = new Simulator(s, () -> Engine.builder().loadPoliciesFromClassPath(false), null).replay();
    PodOutcomeView half = new PodOutcomeView(r, "half");
    assertThat(half.phase()).isEqualTo(Phase.PENDING);
    assertThat(half.message()).isEqualTo("spec.schedulerName is kai-scheduler: the pod is left to kai-scheduler");
  }

  /** The outcome of one pod of the default namespace. */
  private record PodOutcomeView(Phase phase, String message) {
    PodOutcomeView(SimulationResult r, String name) {
      this(find(r, name).phase(), find(r, name).message());
    }

    private static SimulationResult.PodOutcome find(SimulationResult r, String name) {
      return r.pods().stream().filter(p -> p.pod().equals(new PodRef("default", name))).findFirst().orElseThrow();
    }
  }
}
