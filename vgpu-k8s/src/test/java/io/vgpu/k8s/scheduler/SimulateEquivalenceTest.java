package io.vgpu.k8s.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.Engine;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.NodeSelection;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.simulate.NodeSpec;
import io.vgpu.k8s.simulate.Phase;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import io.vgpu.k8s.simulate.ScenarioParser;
import io.vgpu.k8s.simulate.SimulationResult;
import io.vgpu.k8s.simulate.Simulator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every example scenario replayed twice — by {@code vgpu simulate}, and against a (mock) API server
 * through the real webhook, filter and bind over HTTP — must give every pod the same phase, node, cards
 * and annotations.
 */
@EnableKubernetesMockClient(crud = true)
class SimulateEquivalenceTest {
  KubernetesClient client;
  ClusterHarness cluster;

  static Stream<Path> scenarios() throws IOException {
    Path dir = Path.of("../examples/scenarios");
    List<Path> out = new ArrayList<>();
    try (var files = Files.list(dir)) {
      files.filter(p -> p.toString().endsWith(".yaml")).sorted().forEach(out::add);
    }
    return out.stream();
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private record Live(PodRef ref, Pod pod, List<String> candidates) {}

  @ParameterizedTest
  @MethodSource("scenarios")
  void clusterPathMatchesSimulate(Path file) throws Exception {
    Scenario scenario = new ScenarioParser(Set.of()).parse(file);
    if (scenario.events().stream().anyMatch(e -> e instanceof ScenarioEvent.SetConfig)) {
      // Re-registration under a new config is a device-plugin action; SetConfig scenarios are
      // covered by the simulator's own tests.
      return;
    }
    SimulationResult expected = new Simulator(scenario, () -> Engine.builder().loadPoliciesFromClassPath(false), null).replay();

    cluster = new ClusterHarness(client);
    DeviceRegistrar registrar = new DeviceRegistrar("NVIDIA");
    for (NodeSpec node : scenario.nodes()) {
      cluster.node(node.name(), node.labels(), node.annotations(), registrar.register(node.devices(), scenario.config().sharing()));
    }
    scenario.quotas().forEach(cluster::quota);
    cluster.start(SchedulerOptions.defaults(), scenario.config());
    ClusterHarness.await(() -> scenario.quotas().keySet().stream().allMatch(ns -> cluster.server.engine().quota(ns).limits().equals(scenario.quotas().get(ns))), "quotas");

    Map<PodRef, String> rejected = new LinkedHashMap<>();
    Map<PodRef, String> running = new LinkedHashMap<>();
    List<Live> pending = new ArrayList<>();
    for (ScenarioEvent event : scenario.events()) {
      if (event instanceof ScenarioEvent.Create create) {
        Pod pod = create.pod();
        if (pod.getMetadata().getNamespace() == null) {
          pod.getMetadata().setNamespace(PodRefs.DEFAULT_NAMESPACE);
        }
        ClusterHarness.Admission admission = cluster.admit(pod, "admission.k8s.io/v1");
        if (admission.pod().isEmpty()) {
          rejected.put(create.ref(), admission.message());
          continue;
        }
        Pod created = cluster.create(admission.pod().get());
        List<String> candidates = new ArrayList<>();
        for (NodeSpec node : scenario.nodes()) {
          if (NodeSelection.allows(created, node.name(), node.labels())) {
            candidates.add(node.name());
          }
        }
        pending.add(new Live(create.ref(), created, candidates));
      } else if (event instanceof ScenarioEvent.Delete delete) {
        rejected.remove(delete.ref());
        pending.removeIf(l -> l.ref().equals(delete.ref()));
        if (running.remove(delete.ref()) != null) {
          cluster.delete(delete.ref());
        }
      }
      for (var it = pending.iterator(); it.hasNext(); ) {
        Live live = it.next();
        Optional<String> node = cluster.schedule(live.pod(), live.candidates());
        if (node.isPresent()) {
          running.put(live.ref(), node.get());
          it.remove();
        }
      }
    }

    for (SimulationResult.PodOutcome outcome : expected.pods()) {
      String what = file.getFileName() + " " + outcome.pod();
      if (outcome.phase() == Phase.REJECTED) {
        assertThat(rejected).as(what).containsEntry(outcome.pod(), outcome.message());
        continue;
      }
      if (outcome.phase() == Phase.PENDING) {
        assertThat(pending).as(what).anyMatch(l -> l.ref().equals(outcome.pod()));
        continue;
      }
      assertThat(running).as(what).containsEntry(outcome.pod(), outcome.node());
      Map<String, String> annotations = client.pods().inNamespace(outcome.pod().namespace()).withName(outcome.pod().name()).get().getMetadata().getAnnotations();
      for (String key : List.of(HamiAnnotations.ASSIGNED_NODE, HamiAnnotations.DEVICES_ALLOCATED, HamiAnnotations.DEVICES_TO_ALLOCATE)) {
        if (outcome.annotations().containsKey(key)) {
          assertThat(annotations).as(what + " " + key).containsEntry(key, outcome.annotations().get(key));
        }
      }
    }
  }
}
