package io.vgpu.examples.lab;

import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.kai.KaiQueues;
import io.vgpu.examples.lab.kai.KaiResources;
import io.vgpu.examples.lab.kai.KaiStandIn;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What a run under KAI Scheduler adds to the report (SCENARIO.md "Queues and KAI's pod dialect"): {@code
 * queues[]} as KAI would account them at the end, and on each KAI pod left unbound why it waits.
 */
final class KaiReport {
  private KaiReport() {}

  static void complete(ObjectNode report, LabCluster cluster, Scenario scenario) {
    KaiStandIn kai = cluster.kai().orElseThrow();
    // every queue in the scenario's order (those it created, then any other the API holds)
    List<String> order = new ArrayList<>();
    scenario.queues().forEach(q -> order.add(q.spec().name()));
    scenario.events().forEach(e -> {
      if (e instanceof ScenarioEvent.CreateQueue q && !order.contains(q.spec().name())) {
        order.add(q.spec().name());
      }
    });
    List<JsonNode> queues = new ArrayList<>(list(cluster, KaiResources.QUEUE));
    queues.sort(Comparator.comparingInt((JsonNode q) -> {
      int i = order.indexOf(q.path("metadata").path("name").asString(""));
      return i < 0 ? Integer.MAX_VALUE : i;
    }));
    Map<PodRef, JsonNode> binds = new HashMap<>();
    list(cluster, KaiResources.BIND_REQUEST).forEach(b -> binds.put(new PodRef(b.path("metadata").path("namespace").asString(""), b.path("metadata").path("name").asString("")), b));
    report.set("queues", KaiQueues.report(queues, cluster.client().nodes().list().getItems(), cluster.client().pods().inAnyNamespace().list().getItems(),
        list(cluster, KaiResources.BIND_REQUEST)));
    Map<PodRef, KaiStandIn.Waiting> waiting = kai.waiting();
    for (JsonNode pod : report.path("pods")) {
      PodRef ref = new PodRef(pod.path("namespace").asString(""), pod.path("name").asString(""));
      JsonNode bind = binds.get(ref);
      if (bind != null && "Fraction".equals(bind.path("spec").path("receivedResourceType").asString("")) && pod instanceof ObjectNode holder) {
        try {
          holder.put("gpuPortion", Double.parseDouble(bind.path("spec").path("receivedGPU").path("portion").asString("")));
        } catch (NumberFormatException e) {
          // a BindRequest KAI would not write: no portion to show
        }
      }
      KaiStandIn.Waiting why = waiting.get(ref);
      if (why != null && pod.path("node").asString("").isEmpty() && pod instanceof ObjectNode p) {
        p.putObject("waiting").put("reason", why.reason()).put("message", why.message());
      }
    }
  }

  private static List<JsonNode> list(LabCluster cluster, io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext context) {
    List<JsonNode> out = new ArrayList<>();
    var op = KaiResources.of(cluster.client(), context);
    (context.isNamespaceScoped() ? op.inAnyNamespace().list() : op.list()).getItems().forEach(i -> out.add(KaiResources.json(i)));
    return out;
  }
}
