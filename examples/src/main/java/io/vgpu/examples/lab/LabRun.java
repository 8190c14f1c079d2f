package io.vgpu.examples.lab;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.vgpu.api.PodRef;
import io.vgpu.examples.lab.apiserver.UserInfo;
import io.vgpu.examples.lab.components.ComponentProcess;
import io.vgpu.examples.lab.kubelet.KubeletStandIn;
import io.vgpu.examples.lab.kubelet.LabPodRunner;
import io.vgpu.examples.lab.kubelet.PodWorker;
import io.vgpu.examples.lab.kubescheduler.KubeSchedulerStandIn;
import io.vgpu.examples.lab.report.LabReportBuilder;
import io.vgpu.k8s.cli.UnavailableException;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.simulate.Scenario;
import io.vgpu.k8s.simulate.ScenarioEvent;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.JacksonTrees;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Replays one scenario through a {@link LabCluster}: each event is carried out against the real
 * components, then the lab settles — waits until no pod is in transit (each Running with its
 * containers started once, Pending after a scheduling attempt made since the last change in the
 * cluster, ended, or Rejected) — and records the step. At the end it waits for every probe to finish
 * its ops and reads the report from the API objects, the containers and the components' metrics.
 */
public final class LabRun {
  private static final String DENIED = "denied the request: ";

  private final Scenario scenario;
  private final LabCluster cluster;
  private final Duration settleTimeout;
  private final Map<PodRef, Optional<String>> pods = new LinkedHashMap<>();
  private final ArrayNode timeline = PodJson.mapper().createArrayNode();
  private final Settling settling = new Settling();
  /** The pods waiting for a queue or gang, and how often the scheduler woke each (KAI's dialect). */
  private final WaitingPodWatch wakes;
  private ObjectNode writtenConfig;

  /**
   * A run.
   *
   * @param settleTimeout the bound of every wait
   */
  public LabRun(Scenario scenario, LabCluster cluster, Duration settleTimeout) {
    this.scenario = scenario;
    this.cluster = cluster;
    this.settleTimeout = settleTimeout;
    this.writtenConfig = scenario.configWritten().map(c -> (ObjectNode) JacksonTrees.toJson(c)).orElse(PodJson.mapper().createObjectNode());
    this.wakes = new WaitingPodWatch(cluster.client(), cluster.kaiDialect());
  }

  /**
   * Replays every event and returns LAB.md's report (without {@code seconds}).
   *
   * @throws InputException when an event contradicts the state (a pod created twice, a missing pod deleted)
   * @throws UnavailableException when a wait times out or a component dies
   */
  public ObjectNode run() {
    try {
      return replay();
    } finally {
      wakes.close();
    }
  }

  private ObjectNode replay() {
    settle("the cluster to start");
    List<ScenarioEvent> events = scenario.events();
    for (int i = 0; i < events.size(); i++) {
      ScenarioEvent event = events.get(i);
      List<PodRef> placedBefore = cluster.placed();
      ObjectNode step = timeline.addObject();
      step.put("step", i);
      step.put("event", event.describe());
      long stepStart = System.nanoTime();
      apply(event, step);
      settle(event.describe());
      List<PodRef> placedAfter = cluster.placed();
      ArrayNode scheduled = step.putArray("scheduled");
      List<PodRef> placedNow = placedAfter.subList(placedBefore.size(), placedAfter.size());
      placedNow.forEach(p -> scheduled.add(p.toString()));
      step.set("placed", placements(placedNow));
      step.set("uids", uids());
      step.put("seconds", Math.round((System.nanoTime() - stepStart) / 1e7) / 100.0);
      if (step.has("metrics")) {
        step.set("metrics", step.remove("metrics")); // after scheduled and uids, for reading order
      }
    }
    awaitProbes();
    if (cluster.kai().isEmpty()) {
      return new LabReportBuilder(cluster, pods, timeline).build();
    }
    // KAI's reservation pods are pods of the run too (LAB.md "Under KAI Scheduler"), after the scenario's
    Map<PodRef, Optional<String>> all = new LinkedHashMap<>(pods);
    for (Pod pod : cluster.client().pods().inNamespace(io.vgpu.k8s.kai.KaiKeys.RESERVATION_NAMESPACE).list().getItems()) {
      all.putIfAbsent(PodRefs.of(pod), Optional.empty());
    }
    ObjectNode report = new LabReportBuilder(cluster, all, timeline).build();
    KaiReport.complete(report, cluster, scenario);
    return report;
  }

  private void apply(ScenarioEvent event, ObjectNode step) {
    if (event instanceof ScenarioEvent.Create create) {
      create(create);
    } else if (event instanceof ScenarioEvent.Delete delete) {
      delete(delete);
    } else if (event instanceof ScenarioEvent.Patch patch) {
      step.set("patch", patch(patch));
    } else if (event instanceof ScenarioEvent.SetConfig set) {
      writtenConfig.setAll((ObjectNode) JacksonTrees.toJson(set.written()));
      cluster.reconfigure(writtenConfig.deepCopy(), set.config());
      settling.restarted();
    } else if (event instanceof ScenarioEvent.Restart restart) {
      cluster.restart(restart.component());
      settling.restarted();
    } else if (event instanceof ScenarioEvent.Wait wait) {
      sleep(wait.duration());
    } else if (event instanceof ScenarioEvent.Scrape) {
      step.set("metrics", cluster.scrape());
    } else if (event instanceof ScenarioEvent.CreateQueue || event instanceof ScenarioEvent.CreatePodGroup) {
      Map<String, Integer> waiting = wakes.waiting();
      cluster.createKaiObject(event);
      awaitWoken(waiting, event);
    } else if (event instanceof ScenarioEvent.DeleteObject delete) {
      Map<String, Integer> waiting = wakes.waiting();
      cluster.deleteKaiObject(delete);
      awaitWoken(waiting, event);
    }
  }

  private void create(ScenarioEvent.Create event) {
    PodRef ref = event.ref();
    Optional<String> existing = pods.get(ref);
    if (existing != null && existing.isEmpty()) {
      throw new InputException(event.position(), "create: pod " + ref + " already exists");
    }
    pods.remove(ref);
    Pod pod = PodJson.copy(event.pod());
    pod.getMetadata().setNamespace(ref.namespace());
    try {
      Pod created = cluster.client(UserInfo.TENANT).pods().inNamespace(ref.namespace()).resource(pod).create();
      pods.put(ref, Optional.empty());
      String uid = created.getMetadata().getUid();
      await(() -> cluster.schedulers().stream().allMatch(s -> s.seen(uid)) && cluster.kai().map(k -> k.seen(uid)).orElse(true), () -> "the schedulers to see " + ref);
    } catch (KubernetesClientException e) {
      String message = e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : String.valueOf(e.getMessage());
      int denied = message.indexOf(DENIED);
      if (e.getCode() == 400 && denied >= 0) {
        pods.put(ref, Optional.of(message.substring(denied + DENIED.length())));
        return;
      }
      throw new UnavailableException("creating pod " + ref + " failed: " + message.lines().findFirst().orElse(""));
    }
  }

  private void delete(ScenarioEvent.Delete event) {
    PodRef ref = event.ref();
    Optional<String> state = pods.get(ref);
    if (state == null) {
      throw new InputException(event.position(), "delete: pod " + ref + " does not exist");
    }
    pods.remove(ref);
    if (state.isPresent()) {
      return; // rejected: never stored
    }
    Pod pod = cluster.client().pods().inNamespace(ref.namespace()).withName(ref.name()).get();
    if (pod == null) {
      return;
    }
    String uid = pod.getMetadata().getUid();
    settling.deleting(pod);
    cluster.client(UserInfo.TENANT).pods().inNamespace(ref.namespace()).withName(ref.name()).withGracePeriod(0).delete();
    await(() -> cluster.schedulers().stream().allMatch(s -> s.seenDeleted(uid)) && cluster.kai().map(k -> k.seenDeleted(uid)).orElse(true),
        () -> "the schedulers to see " + ref + " deleted");
    String node = pod.getSpec().getNodeName();
    if (node != null && cluster.kubelets().containsKey(node)) {
      KubeletStandIn kubelet = cluster.kubelets().get(node);
      Optional<PodWorker> worker = kubelet.worker(uid);
      await(() -> kubelet.worker(uid).isEmpty() && worker.map(PodWorker::stopped).orElse(true), () -> "the kubelet of " + node + " to stop " + ref);
    }
  }

  /**
   * Sends the event's JSON merge patch of the pod's metadata as its user; the timeline entry is whether
   * the API server took it, and its message when it did not.
   */
  private ObjectNode patch(ScenarioEvent.Patch event) {
    PodRef ref = event.ref();
    Optional<String> state = pods.get(ref);
    if (state == null || state.isPresent()) {
      throw new InputException(event.position(), "patch: pod " + ref + " does not exist");
    }
    UserInfo user = UserInfo.named(event.as()).orElseThrow(() -> new InputException(event.position(), "patch: '" + event.as() + "' is not a user of the lab"));
    ObjectNode body = PodJson.mapper().createObjectNode();
    ObjectNode metadata = body.putObject("metadata");
    mergeValues(metadata, "annotations", event.annotations());
    mergeValues(metadata, "labels", event.labels());
    ObjectNode outcome = PodJson.mapper().createObjectNode();
    try {
      cluster.client(user).pods().inNamespace(ref.namespace()).withName(ref.name()).patch(PatchContext.of(PatchType.JSON_MERGE), body.toString());
      outcome.put("allowed", true);
    } catch (KubernetesClientException e) {
      if (e.getCode() < 400 || e.getCode() >= 500) {
        throw new UnavailableException("patching pod " + ref + " as " + event.as() + " failed: " + String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
      }
      outcome.put("allowed", false);
      outcome.put("message", e.getStatus() != null && e.getStatus().getMessage() != null ? e.getStatus().getMessage() : String.valueOf(e.getMessage()));
    }
    return outcome;
  }

  /** A merge patch's map: each value set, each absent value null (which removes the key). */
  private static void mergeValues(ObjectNode metadata, String field, Map<String, Optional<String>> values) {
    if (values.isEmpty()) {
      return;
    }
    ObjectNode map = metadata.putObject(field);
    values.forEach((k, v) -> {
      if (v.isPresent()) {
        map.put(k, v.get());
      } else {
        map.putNull(k);
      }
    });
  }

  /**
   * When vgpu schedules KAI's pods, waits until the scheduler has tried again every pod that waited for a
   * queue or gang before a Queue or PodGroup changed: kube-scheduler does not watch those objects, so the
   * scheduler clears each waiting pod's {@value KaiKeys#WAITING_ANNOTATION}, a change of the pod that
   * kube-scheduler answers. Settling then waits for the attempts themselves.
   */
  private void awaitWoken(Map<String, Integer> waiting, ScenarioEvent event) {
    if (!cluster.kaiDialect()) {
      return;
    }
    await(() -> wakes.wokenSince(waiting), () -> "the scheduler to wake the pods waiting for a queue or gang after " + event.describe() + ": "
        + String.join(", ", wakes.stillWaiting(waiting)));
  }

  /** Waits until no pod is in transit and the components have seen the event ({@link Settling}). */
  private void settle(String after) {
    List<String> waiting = new ArrayList<>(List.of("nothing read yet"));
    Settling.Cluster view = new Settling.Cluster() {
      @Override
      public List<String> inTransit() {
        return LabRun.this.inTransit();
      }

      @Override
      public CaughtUp.View view() {
        return new CaughtUp.View(cluster.client().pods().inAnyNamespace().list().getItems(), cluster.client().nodes().list().getItems(),
            cluster.config().resourceCountName(), cluster.schedulerNodeLabels(), cluster.scrape());
      }

      @Override
      public void retryUnschedulable() {
        cluster.schedulers().forEach(KubeSchedulerStandIn::retryUnschedulable);
      }
    };
    await(() -> {
      List<String> now = settling.waitingFor(view);
      waiting.clear();
      waiting.addAll(now);
      return now.isEmpty();
    }, () -> "the cluster to settle after " + after + "; still: " + String.join("; ", waiting));
  }

  private List<String> inTransit() {
    List<String> out = new ArrayList<>();
    cluster.schedulers().forEach(s -> out.addAll(s.pendingWork()));
    cluster.kai().ifPresent(k -> out.addAll(k.pendingWork()));
    for (Pod pod : cluster.client().pods().inAnyNamespace().list().getItems()) {
      String node = pod.getSpec().getNodeName();
      if (node == null || node.isEmpty()) {
        continue;
      }
      String phase = pod.getStatus() == null ? "" : String.valueOf(pod.getStatus().getPhase());
      if (phase.equals("Succeeded") || phase.equals("Failed")) {
        continue;
      }
      KubeletStandIn kubelet = cluster.kubelets().get(node);
      Optional<PodWorker> worker = kubelet == null ? Optional.empty() : kubelet.worker(pod.getMetadata().getUid());
      if (worker.isEmpty() || !worker.get().settled()) {
        out.add(PodRefs.of(pod) + " is starting on " + node);
      }
    }
    return out;
  }

  /** Waits until every probe container ran all its ops (or its process ended). */
  private void awaitProbes() {
    await(() -> unfinishedProbes().isEmpty(), () -> "probes to finish their ops: " + String.join(", ", unfinishedProbes()));
  }

  private List<String> unfinishedProbes() {
    List<String> out = new ArrayList<>();
    for (KubeletStandIn kubelet : cluster.kubelets().values()) {
      for (PodWorker worker : kubelet.workers().values()) {
        for (var c : worker.containers()) {
          var spec = worker.pod().getSpec();
          var container = new ArrayList<>(spec.getContainers());
          Optional.ofNullable(spec.getInitContainers()).ifPresent(container::addAll);
          boolean probe = container.stream().anyMatch(k -> k.getName().equals(c.name()) && LabPodRunner.isProbe(k.getImage()));
          var running = c.current();
          if (probe && running != null && running.alive() && !running.opsComplete()) {
            out.add(PodRefs.of(worker.pod()) + " " + c.name());
          }
        }
      }
    }
    return out;
  }

  /**
   * Where the pods this step placed went, read from their API objects now: the node and each
   * container's cards (so a check can compare placements of pods a later step deletes).
   */
  private ObjectNode placements(List<PodRef> placed) {
    ObjectNode out = PodJson.mapper().createObjectNode();
    for (PodRef ref : placed) {
      Pod pod = cluster.client().pods().inNamespace(ref.namespace()).withName(ref.name()).get();
      if (pod == null) {
        continue;
      }
      ObjectNode entry = out.putObject(ref.toString());
      entry.put("node", Optional.ofNullable(pod.getSpec().getNodeName()).orElse(""));
      entry.set("containers", LabReportBuilder.containerDevices(pod));
    }
    return out;
  }

  private ObjectNode uids() {
    ObjectNode out = PodJson.mapper().createObjectNode();
    for (Pod pod : cluster.client().pods().inAnyNamespace().list().getItems()) {
      out.put(PodRefs.of(pod).toString(), pod.getMetadata().getUid());
    }
    return out;
  }

  private void await(BooleanSupplier condition, Supplier<String> what) {
    long deadline = System.nanoTime() + settleTimeout.toNanos();
    while (true) {
      Optional<ComponentProcess> dead = cluster.deadComponent();
      if (dead.isPresent()) {
        throw dead.get().failure(dead.get().name() + " died while the lab waited for " + what.get());
      }
      if (condition.getAsBoolean()) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new UnavailableException("timed out after " + settleTimeout.toSeconds() + " s waiting for " + what.get() + " (raise --settle-timeout if the machine is slow)");
      }
      sleep(Duration.ofMillis(25));
    }
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnavailableException("interrupted");
    }
  }

  /** The scenario's events, for reporting. */
  JsonNode timeline() {
    return timeline;
  }
}
