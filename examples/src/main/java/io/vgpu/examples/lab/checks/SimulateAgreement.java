package io.vgpu.examples.lab.checks;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.core.Engine;
import io.vgpu.k8s.simulate.Phase;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import io.vgpu.k8s.simulate.SimulationResult;
import io.vgpu.k8s.simulate.Simulator;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * The lab's placements must be {@code vgpu simulate}'s: every pod simulate runs is bound to the same
 * node with the same cards per container, every pod it leaves pending is unbound, every pod it rejects
 * is rejected with the same message. Under {@code stack: kai} the pods KAI schedules are left out: the
 * lab's KAI stand-in places them, not vgpu. Pods a {@code patch} event changed (the API server took it) are
 * left out: simulate does not apply patches, so it has nothing to compare them with.
 */
public final class SimulateAgreement {
  private SimulateAgreement() {}

  /** The differences between the lab's report and simulate's replay of the same scenario; empty when they agree. */
  public static List<String> differences(Scenario scenario, JsonNode report) {
    SimulationResult expected = new Simulator(scenario, Engine::builder, null).replay();
    Set<PodRef> patched = patched(scenario, report);
    Set<PodRef> kaiPods = kaiPods(scenario);
    List<String> out = new ArrayList<>();
    for (SimulationResult.PodOutcome pod : expected.pods()) {
      if (patched.contains(pod.pod()) || kaiPods.contains(pod.pod())) {
        continue;
      }
      String name = pod.pod().toString();
      JsonNode lab = null;
      for (JsonNode p : report.path("pods")) {
        if ((p.path("namespace").asString() + "/" + p.path("name").asString()).equals(name)) {
          lab = p;
        }
      }
      if (lab == null) {
        out.add(name + ": missing from the lab's report");
        continue;
      }
      String phase = lab.path("phase").asString();
      String node = lab.path("node").asString("");
      if (pod.phase() == Phase.REJECTED) {
        if (!phase.equals("Rejected") || !lab.path("message").asString("").equals(pod.message())) {
          out.add(name + ": simulate rejects it (" + pod.message() + "), the lab has " + phase + " " + lab.path("message").asString(""));
        }
      } else if (pod.phase() == Phase.PENDING) {
        if (!node.isEmpty() || phase.equals("Rejected")) {
          out.add(name + ": simulate leaves it pending, the lab has " + phase + (node.isEmpty() ? "" : " on " + node));
        }
      } else {
        if (!node.equals(pod.node())) {
          String why = lab.path("reasons").path(pod.node()).asString("");
          out.add(name + ": simulate places it on " + pod.node() + ", the lab " + (node.isEmpty() ? "leaves it " + phase : "on " + node)
              + (why.isEmpty() ? "" : " (" + pod.node() + ": " + why + ")"));
          continue;
        }
        compareContainers(name, pod.initContainers(), lab.path("initContainers"), out);
        compareContainers(name, pod.containers(), lab.path("containers"), out);
      }
    }
    return out;
  }

  /**
   * Under {@code stack: kai}, the pods KAI Scheduler schedules (they name {@code kai-scheduler}): the
   * lab's KAI stand-in places them, simulate leaves them to KAI, so there is nothing to compare.
   */
  private static Set<PodRef> kaiPods(Scenario scenario) {
    Set<PodRef> out = new HashSet<>();
    if (scenario.stack() != io.vgpu.k8s.simulate.Stack.KAI) {
      return out;
    }
    for (ScenarioEvent e : scenario.events()) {
      if (e instanceof ScenarioEvent.Create create && io.vgpu.k8s.kai.KaiKeys.SCHEDULER_NAME.equals(create.pod().getSpec().getSchedulerName())) {
        out.add(create.ref());
      }
    }
    return out;
  }

  /**
   * The pods whose present incarnation an allowed patch changed: a patch the timeline says was allowed,
   * after the pod's last creation (event {@code i} is the timeline's step {@code i}).
   */
  private static Set<PodRef> patched(Scenario scenario, JsonNode report) {
    Set<PodRef> out = new HashSet<>();
    List<ScenarioEvent> events = scenario.events();
    for (int i = 0; i < events.size(); i++) {
      if (events.get(i) instanceof ScenarioEvent.Create create) {
        out.remove(create.ref());
      } else if (events.get(i) instanceof ScenarioEvent.Patch patch && report.path("timeline").path(i).path("patch").path("allowed").asBoolean(false)) {
        out.add(patch.ref());
      }
    }
    return out;
  }

  private static void compareContainers(String pod, List<SimulationResult.ContainerOutcome> expected, JsonNode lab, List<String> out) {
    for (int i = 0; i < expected.size(); i++) {
      SimulationResult.ContainerOutcome c = expected.get(i);
      JsonNode devices = lab.path(i).path("devices");
      List<String> want = new ArrayList<>();
      for (DeviceGrant d : c.devices()) {
        want.add(d.uuid() + "/" + d.memoryMiB() + "/" + d.cores());
      }
      List<String> got = new ArrayList<>();
      devices.forEach(d -> got.add(d.path("uuid").asString() + "/" + d.path("memoryMiB").asLong() + "/" + d.path("cores").asInt()));
      if (!want.equals(got)) {
        out.add(pod + " container " + c.name() + ": simulate grants " + want + ", the lab " + got);
      }
    }
  }
}
