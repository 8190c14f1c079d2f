package io.vgpu.examples.lab.report;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.NodeUsage;
import io.vgpu.examples.lab.LabCluster;
import io.vgpu.examples.lab.kubelet.ContainerRecord;
import io.vgpu.examples.lab.kubelet.PodWorker;
import io.vgpu.examples.lab.kubelet.RunningContainer;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.codec.ReasonCodec;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.kai.KaiPortionEnv;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.simulate.SimulationJson;
import io.vgpu.k8s.simulate.SimulationResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * LAB.md's report at the end of a run, read from what the real components left: pods and Events from
 * the API server, container state and probe output from the kubelets' processes, metrics scraped from
 * the components, and {@code nodes} computed from the nodes' registrations and the pods' allocation
 * annotations (not from any component's memory).
 */
public final class LabReportBuilder {
  private final LabCluster cluster;
  private final Map<PodRef, Optional<String>> order;
  private final ArrayNode timeline;

  /**
   * A builder.
   *
   * @param order every pod created and not deleted, in creation order, with the webhook's message when it was rejected
   */
  public LabReportBuilder(LabCluster cluster, Map<PodRef, Optional<String>> order, ArrayNode timeline) {
    this.cluster = cluster;
    this.order = order;
    this.timeline = timeline;
  }

  /** The report. */
  public ObjectNode build() {
    ObjectNode root = PodJson.mapper().createObjectNode();
    Map<PodRef, Pod> live = new HashMap<>();
    for (Pod pod : cluster.client().pods().inAnyNamespace().list().getItems()) {
      live.put(PodRefs.of(pod), pod);
    }
    ArrayNode pods = root.putArray("pods");
    order.forEach((ref, rejection) -> {
      if (rejection.isPresent()) {
        ObjectNode p = pods.addObject();
        p.put("namespace", ref.namespace());
        p.put("name", ref.name());
        p.put("phase", "Rejected");
        p.put("message", rejection.get());
      } else if (live.containsKey(ref)) {
        pods.add(pod(ref, live.get(ref)));
      }
    });
    root.set("timeline", timeline);
    root.set("nodes", nodes(live.values()));
    root.set("events", events());
    root.set("metrics", cluster.scrape());
    ObjectNode uids = root.putObject("uids");
    order.keySet().stream().filter(live::containsKey).forEach(ref -> uids.put(ref.toString(), live.get(ref).getMetadata().getUid()));
    return root;
  }

  private ObjectNode pod(PodRef ref, Pod pod) {
    ObjectNode out = PodJson.mapper().createObjectNode();
    out.put("namespace", ref.namespace());
    out.put("name", ref.name());
    String node = Optional.ofNullable(pod.getSpec().getNodeName()).orElse("");
    String phase = node.isEmpty() ? "Pending" : Optional.ofNullable(pod.getStatus()).map(s -> s.getPhase()).orElse("Pending");
    out.put("phase", phase);
    if (!node.isEmpty()) {
      out.put("node", node);
    }
    // what the webhook decided, as kubectl shows it
    out.put("schedulerName", Optional.ofNullable(pod.getSpec().getSchedulerName()).orElse("default-scheduler"));
    Optional.ofNullable(pod.getSpec().getRuntimeClassName()).ifPresent(r -> out.put("runtimeClassName", r));
    Map<String, String> annotations = PodRefs.annotations(pod);
    // every label and annotation as the API server stores it, the scheduler's among them
    ObjectNode labels = out.putObject("labels");
    new java.util.TreeMap<>(Optional.ofNullable(pod.getMetadata().getLabels()).orElse(Map.of())).forEach(labels::put);
    if (!annotations.isEmpty()) {
      ObjectNode written = out.putObject("annotations");
      new java.util.TreeMap<>(annotations).forEach(written::put);
    }
    if (node.isEmpty()) {
      // why vgpu's scheduler keeps a pod of KAI's dialect waiting whatever the nodes, as simulate says it
      String waiting = annotations.get(KaiKeys.WAITING_ANNOTATION);
      int colon = waiting == null ? -1 : waiting.indexOf(": ");
      if (colon > 0) {
        out.putObject("waiting").put("reason", waiting.substring(0, colon)).put("message", waiting.substring(colon + 2));
      }
      Map<String, String> reasons = new LinkedHashMap<>();
      cluster.schedulers().forEach(s -> reasons.putAll(s.reasons(ref)));
      if (!reasons.isEmpty()) {
        ObjectNode r = out.putObject("reasons");
        // the extender only knows the node never registered; the lab knows why
        reasons.forEach((where, reason) -> r.put(where,
            reason.equals(ReasonCodec.NODE_UNREGISTERED) ? cluster.withoutNodeAgent(where).map(why -> reason + ": " + why).orElse(reason) : reason));
      }
      return out;
    }
    List<Container> init = Optional.ofNullable(pod.getSpec().getInitContainers()).orElse(List.of());
    List<List<DeviceGrant>> segments = segments(annotations.get(HamiAnnotations.DEVICES_ALLOCATED));
    Optional<PodWorker> worker = Optional.ofNullable(cluster.kubelets().get(node)).flatMap(k -> k.worker(pod.getMetadata().getUid()));
    if (!init.isEmpty()) {
      ArrayNode initOut = out.putArray("initContainers");
      for (int i = 0; i < init.size(); i++) {
        initOut.add(container(init.get(i), segment(segments, i), worker));
      }
    }
    ArrayNode containers = out.putArray("containers");
    List<Container> app = pod.getSpec().getContainers();
    for (int i = 0; i < app.size(); i++) {
      containers.add(container(app.get(i), segment(segments, init.size() + i), worker));
    }
    String message = pod.getStatus() == null ? null : pod.getStatus().getMessage();
    if (message != null && !message.isEmpty()) {
      out.put("message", message);
    }
    // a fraction of KAI's dialect: the portion the node agent gave its container (KAI's GPU_PORTION)
    for (JsonNode c : containers) {
      String portion = c.path("env").path(KaiPortionEnv.GPU_PORTION).asString("");
      if (!portion.isEmpty() && PodRefs.annotations(pod).containsKey(HamiAnnotations.DEVICES_ALLOCATED)) {
        try {
          out.put("gpuPortion", Double.parseDouble(portion));
        } catch (NumberFormatException e) {
          // a container's own GPU_PORTION that is not a number: no portion to show
        }
        break;
      }
    }
    return out;
  }

  /** Each container's cards by its allocation annotation: {@code [{name, devices}]}, init containers first. */
  public static ArrayNode containerDevices(Pod pod) {
    ArrayNode out = PodJson.mapper().createArrayNode();
    List<Container> all = new ArrayList<>(Optional.ofNullable(pod.getSpec().getInitContainers()).orElse(List.of()));
    all.addAll(pod.getSpec().getContainers());
    List<List<DeviceGrant>> segments = segments(PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_ALLOCATED));
    for (int i = 0; i < all.size(); i++) {
      ObjectNode c = out.addObject();
      c.put("name", all.get(i).getName());
      c.set("devices", SimulationJson.grants(segment(segments, i)));
    }
    return out;
  }

  private static List<List<DeviceGrant>> segments(String value) {
    if (value == null || value.isEmpty()) {
      return List.of();
    }
    try {
      return DeviceListCodec.decode(value);
    } catch (IllegalArgumentException e) {
      return List.of();
    }
  }

  private static List<DeviceGrant> segment(List<List<DeviceGrant>> segments, int i) {
    return i < segments.size() ? segments.get(i) : List.of();
  }

  private ObjectNode container(Container spec, List<DeviceGrant> devices, Optional<PodWorker> worker) {
    ObjectNode out = PodJson.mapper().createObjectNode();
    out.put("name", spec.getName());
    out.set("devices", SimulationJson.grants(devices));
    Optional<ContainerRecord> record = worker.flatMap(w -> w.containers().stream().filter(c -> c.name().equals(spec.getName())).findFirst());
    // what the container's process received: its own variables as kubelet resolved them, the device
    // plugin's, the runtime's; empty before it first started
    ObjectNode env = out.putObject("env");
    record.ifPresent(r -> r.processEnv().forEach(env::put));
    RunningContainer running = record.map(ContainerRecord::current).orElse(null);
    String state = record.map(ContainerRecord::state).orElse("waiting");
    out.put("state", state);
    if (state.equals("terminated") && running != null) {
      out.put("exitCode", running.exitCode());
      if (running.signal() != 0) {
        out.put("signal", running.signal());
      } else {
        out.putNull("signal");
      }
      out.put("reason", running.exitCode() == 0 ? "Completed" : "Error");
    } else {
      out.putNull("exitCode");
      out.putNull("signal");
      if (state.equals("waiting")) {
        out.put("reason", record.map(ContainerRecord::waitingReason).orElse("ContainerCreating"));
      } else {
        out.putNull("reason");
      }
    }
    out.put("restarts", record.map(ContainerRecord::restarts).orElse(0));
    if (running != null) {
      out.put("containerID", "containerd://" + running.id());
      out.put("pid", running.pid());
      out.put("startedAt", running.startedAt().toString());
      Instant finished = record.map(ContainerRecord::finishedAt).orElse(null);
      if (finished != null && state.equals("terminated")) {
        out.put("finishedAt", finished.toString());
        out.put("runSeconds", seconds(running.startedAt(), finished));
        // how long the process lived after its last line: for a probe, after its last op
        running.lastOutputAt().ifPresent(last -> out.put("secondsAfterLastOutput", seconds(last, finished)));
      }
      out.put("complete", running.opsComplete() || !isProbeRun(running));
      ArrayNode observed = out.putArray("observed");
      running.observed().forEach(observed::add);
    } else {
      out.put("complete", false);
      out.putArray("observed");
    }
    return out;
  }

  private static double seconds(Instant from, Instant to) {
    return Math.round(Duration.between(from, to).toMillis() / 10.0) / 100.0;
  }

  private static boolean isProbeRun(RunningContainer running) {
    return !running.spec().command().isEmpty() && running.spec().command().get(0).endsWith("vgpu-lab-probe");
  }

  /** Capacity from the nodes' registrations, usage from the allocation annotations of pods that hold them. */
  private ArrayNode nodes(Collection<Pod> pods) {
    Engine engine = Engine.builder().loadPoliciesFromClassPath(false).build();
    Map<String, Map<String, String>> models = new HashMap<>();
    for (Node node : cluster.client().nodes().list().getItems()) {
      String name = node.getMetadata().getName();
      Map<String, String> annotations = Optional.ofNullable(node.getMetadata().getAnnotations()).orElse(Map.of());
      List<SchedulableDevice> devices = Optional.ofNullable(annotations.get(HamiAnnotations.NODE_REGISTER)).map(NodeRegisterCodec::decode).orElse(List.of());
      Set<String> cordoned = new HashSet<>();
      for (String uuid : annotations.getOrDefault(HamiAnnotations.DEVICE_CORDON, "").split(",")) {
        if (!uuid.isBlank()) {
          cordoned.add(uuid.trim());
        }
      }
      engine.upsertNode(new NodeDevices(name, devices, cordoned));
      Map<String, String> model = new HashMap<>();
      Optional.ofNullable(cluster.machines().get(name)).ifPresent(m -> m.devices().forEach(d -> model.put(d.uuid(), d.model())));
      models.put(name, model);
    }
    for (Pod pod : pods) {
      String node = pod.getSpec().getNodeName();
      String phase = pod.getStatus() == null ? "" : String.valueOf(pod.getStatus().getPhase());
      String allocated = PodRefs.annotations(pod).get(HamiAnnotations.DEVICES_ALLOCATED);
      if (node == null || node.isEmpty() || allocated == null || phase.equals("Succeeded") || phase.equals("Failed")) {
        continue;
      }
      List<String> init = Optional.ofNullable(pod.getSpec().getInitContainers()).orElse(List.of()).stream().map(Container::getName).toList();
      List<String> app = pod.getSpec().getContainers().stream().map(Container::getName).toList();
      try {
        PodGrant grant = DeviceListCodec.decodeGrant(PodRefs.of(pod), node, allocated, init, app);
        engine.restore(grant);
      } catch (IllegalArgumentException e) {
        // a grant that does not decode holds nothing in this view
      }
    }
    ArrayNode out = PodJson.mapper().createArrayNode();
    Map<String, Node> objects = new HashMap<>();
    cluster.client().nodes().list().getItems().forEach(n -> objects.put(n.getMetadata().getName(), n));
    for (String name : cluster.kubelets().keySet()) {
      Optional<NodeUsage> usage = engine.usage(name);
      List<SimulationResult.DeviceOutcome> devices = new ArrayList<>();
      if (usage.isPresent()) {
        for (DeviceUsage d : usage.get().devices()) {
          devices.add(new SimulationResult.DeviceOutcome(models.getOrDefault(name, Map.of()).getOrDefault(d.device().uuid(), d.device().type()), d));
        }
      }
      ObjectNode node = SimulationJson.node(new SimulationResult.NodeOutcome(name, devices));
      // what kubelet advertises (the device plugins' resources among them) and the node's labels, as the API server holds them
      Optional<Node> object = Optional.ofNullable(objects.get(name));
      ObjectNode allocatable = node.putObject("allocatable");
      object.map(Node::getStatus).map(st -> st.getAllocatable()).ifPresent(a -> new java.util.TreeMap<>(a).forEach((k, v) -> allocatable.put(k, v.toString())));
      ObjectNode labels = node.putObject("labels");
      object.map(n -> n.getMetadata().getLabels()).ifPresent(l -> new java.util.TreeMap<>(l).forEach(labels::put));
      out.add(node);
    }
    return out;
  }

  private ArrayNode events() {
    ArrayNode out = PodJson.mapper().createArrayNode();
    List<Event> all = new ArrayList<>(cluster.client().v1().events().inAnyNamespace().list().getItems());
    all.sort((a, b) -> Long.compare(version(a), version(b)));
    for (Event e : all) {
      ObjectNode event = out.addObject();
      var involved = e.getInvolvedObject();
      String ns = involved == null ? null : involved.getNamespace();
      String name = involved == null ? "" : involved.getName();
      event.put("object", ns == null || ns.isEmpty() ? name : ns + "/" + name);
      event.put("type", e.getType());
      event.put("reason", e.getReason());
      event.put("message", e.getMessage());
      event.put("count", e.getCount() == null ? 1 : e.getCount());
    }
    return out;
  }

  private static long version(Event e) {
    try {
      return Long.parseLong(e.getMetadata().getResourceVersion());
    } catch (RuntimeException ex) {
      return 0;
    }
  }
}
