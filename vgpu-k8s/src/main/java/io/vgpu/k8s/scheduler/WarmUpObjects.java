package io.vgpu.k8s.scheduler;

import io.vgpu.api.ResourceSchema;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.nio.charset.StandardCharsets;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The made-up pods and nodes a {@link WarmUp} reads, shaped as an API server sends them: a controller's
 * pod with its owner, managed fields, volumes, environment and tolerations, through the stages an
 * informer sees it in (created, decided, bound, running, deleted), and a node as kubelet reports it.
 *
 * <p>The shape is the point. The JIT compiles a reader for the branches it saw while it warmed up;
 * a field the made-up objects lacked (a nested object to skip, a condition list, an init container's
 * status) sends the compiled reader back to the interpreter and has it compiled again while it serves,
 * which for the lean readers was the largest single compilation cost of a first burst. So the rounds
 * vary: every fourth pod has a sidecar, an init container, or a node selector, affinity and overhead.
 */
final class WarmUpObjects {
  /** The stages of a pod as the informers see it. */
  enum Stage {
    /** Created by its controller, not yet scheduled: what kube-scheduler also sends the filter. */
    PENDING,
    /** With the scheduler's decision (annotations and label). */
    DECIDED,
    /** Bound: its node set and the PodScheduled condition true. */
    BOUND,
    /** Started by kubelet: the status's conditions, addresses and container statuses. */
    RUNNING,
    /** Being deleted: a deletion time and grace period. */
    DELETING
  }

  private static final String TIME = "2026-01-01T00:00:00Z";
  /** The namespace of the pods that the warm-up's filter places. */
  static final String NAMESPACE = "warm-up";
  /**
   * The namespace of the pods it refuses, so that a namespace the engine has never reserved for is read
   * as often as one it has (the first pod of a namespace takes that branch in a cluster).
   */
  static final String REFUSED_NAMESPACE = "warm-up-refused";
  /** The made-up ReplicaSet's UID, the owner of every warm-up pod. */
  private static final String OWNER_UID = "00000000-0000-4000-a000-000000000001";

  private final JsonMapper json;
  private final ResourceSchema schema;

  WarmUpObjects(JsonMapper json, ResourceSchema schema) {
    this.json = json;
    this.schema = schema;
  }

  /**
   * A pod of kind {@code variant} at {@link Stage#PENDING}, its name, UID, resource version and GPU
   * request placeholders.
   */
  private ObjectNode pod(int variant) {
    ObjectNode pod = json.createObjectNode();
    pod.put("apiVersion", "v1");
    pod.put("kind", "Pod");
    ObjectNode metadata = pod.putObject("metadata");
    metadata.put("name", "@NAME@");
    metadata.put("generateName", "warm-up-@HASH@-");
    metadata.put("namespace", "@NAMESPACE@");
    metadata.put("uid", "@UID@");
    metadata.put("resourceVersion", "@RV0@");
    metadata.put("creationTimestamp", TIME);
    ObjectNode labels = metadata.putObject("labels");
    labels.put("app", "warm-up");
    labels.put("pod-template-hash", "@HASH@");
    metadata.putObject("annotations").put("kubectl.kubernetes.io/default-container", "main");
    ObjectNode owner = metadata.putArray("ownerReferences").addObject();
    owner.put("apiVersion", "apps/v1").put("kind", "ReplicaSet").put("name", "warm-up-@HASH@").put("uid", OWNER_UID).put("controller", true).put("blockOwnerDeletion", true);
    managedFields(metadata, "kube-controller-manager", null);

    ObjectNode spec = pod.putObject("spec");
    ArrayNode volumes = spec.putArray("volumes");
    volumes.addObject().put("name", "data").putObject("emptyDir");
    ObjectNode projected = volumes.addObject().put("name", "kube-api-access").putObject("projected");
    projected.put("defaultMode", 420);
    ArrayNode sources = projected.putArray("sources");
    sources.addObject().putObject("serviceAccountToken").put("expirationSeconds", 3607).put("path", "token");
    sources.addObject().putObject("configMap").put("name", "kube-root-ca.crt").putArray("items").addObject().put("key", "ca.crt").put("path", "ca.crt");
    ArrayNode containers = spec.putArray("containers");
    container(containers.addObject(), "main");
    if (variant == 1) {
      ObjectNode sidecar = containers.addObject();
      sidecar.put("name", "sidecar").put("image", "warm-up/sidecar:1");
      ObjectNode resources = sidecar.putObject("resources");
      resources.putObject("requests").put("cpu", "100m").put("memory", "64Mi");
    }
    if (variant == 2) {
      ObjectNode init = spec.putArray("initContainers").addObject();
      init.put("name", "init").put("image", "warm-up/init:1").put("restartPolicy", "Always");
      init.putObject("resources").putObject("limits").put("cpu", "500m").put("memory", "128Mi");
    }
    spec.put("restartPolicy", "Always");
    spec.put("terminationGracePeriodSeconds", 30);
    spec.put("dnsPolicy", "ClusterFirst");
    spec.put("serviceAccountName", "default");
    spec.putObject("securityContext");
    spec.put("schedulerName", "hami-scheduler");
    if (variant == 3) {
      spec.putObject("nodeSelector").put("gpu", "on");
      ObjectNode term = spec.putObject("affinity").putObject("nodeAffinity").putObject("requiredDuringSchedulingIgnoredDuringExecution").putArray("nodeSelectorTerms").addObject();
      term.putArray("matchExpressions").addObject().put("key", "kubernetes.io/os").put("operator", "In").putArray("values").add("linux");
      spec.putObject("overhead").put("cpu", "250m").put("memory", "120Mi");
      spec.put("priorityClassName", "warm-up");
    }
    ArrayNode tolerations = spec.putArray("tolerations");
    for (String key : new String[] {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}) {
      tolerations.addObject().put("key", key).put("operator", "Exists").put("effect", "NoExecute").put("tolerationSeconds", 300);
    }
    spec.put("priority", 0);
    spec.put("enableServiceLinks", true);
    spec.put("preemptionPolicy", "PreemptLowerPriority");
    ObjectNode status = pod.putObject("status");
    status.put("phase", "Pending");
    status.putArray("conditions").addObject().put("type", "PodScheduled").put("status", "False").putNull("lastProbeTime").put("lastTransitionTime", TIME)
        .put("reason", "Unschedulable");
    status.put("qosClass", "Burstable");
    return pod;
  }

  /** Moves {@code pod} on to {@code stage}: its node and the scheduler's decision are placeholders. */
  private static void advance(ObjectNode pod, Stage stage) {
    ObjectNode metadata = (ObjectNode) pod.get("metadata");
    metadata.put("resourceVersion", "@RV" + stage.ordinal() + "@");
    ObjectNode status = (ObjectNode) pod.get("status");
    switch (stage) {
      case PENDING -> {}
      case DECIDED -> {
        ((ObjectNode) metadata.get("annotations")).put("@DECISION@", "");
        ((ObjectNode) metadata.get("labels")).put(HamiAnnotations.ASSIGNED_NODE, "@NODE@");
        managedFields(metadata, "vgpu-scheduler", null);
      }
      case BOUND -> {
        ((ObjectNode) pod.get("spec")).put("nodeName", "@NODE@");
        ObjectNode scheduled = (ObjectNode) status.get("conditions").get(0);
        scheduled.put("status", "True");
        scheduled.remove("reason");
      }
      case RUNNING -> {
        status.put("phase", "Running");
        ArrayNode conditions = (ArrayNode) status.get("conditions");
        for (String type : new String[] {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"}) {
          conditions.addObject().put("type", type).put("status", "True").putNull("lastProbeTime").put("lastTransitionTime", TIME);
        }
        status.put("hostIP", "10.0.0.1");
        status.putArray("hostIPs").addObject().put("ip", "10.0.0.1");
        status.put("podIP", "10.64.0.1");
        status.putArray("podIPs").addObject().put("ip", "10.64.0.1");
        status.put("startTime", TIME);
        if (pod.get("spec").has("initContainers")) {
          ObjectNode init = status.putArray("initContainerStatuses").addObject();
          init.put("name", "init").put("ready", true).put("restartCount", 0).put("image", "warm-up/init:1");
          ObjectNode terminated = init.putObject("state").putObject("terminated");
          terminated.put("exitCode", 0).put("reason", "Completed").put("startedAt", TIME).put("finishedAt", TIME);
          init.putObject("lastState");
        }
        ArrayNode statuses = status.putArray("containerStatuses");
        for (var c : pod.get("spec").get("containers")) {
          ObjectNode s = statuses.addObject();
          s.put("name", c.get("name").asString()).put("ready", true).put("started", true).put("restartCount", 0).put("image", c.get("image").asString());
          s.put("containerID", "containerd://" + c.get("name").asString());
          s.putObject("state").putObject("running").put("startedAt", TIME);
          s.putObject("lastState");
        }
        managedFields(metadata, "kubelet", "status");
      }
      case DELETING -> {
        metadata.put("deletionTimestamp", TIME);
        metadata.put("deletionGracePeriodSeconds", 30);
      }
    }
  }

  /**
   * The texts of pods of kind {@code variant} (0-3): the watch events of each stage and the filter
   * request kube-scheduler sends with {@code nodeNames}.
   */
  PodTexts texts(int variant, List<String> nodeNames) {
    ObjectNode pod = pod(variant);
    Map<Stage, TextTemplate> events = new EnumMap<>(Stage.class);
    TextTemplate filter = null;
    for (Stage stage : Stage.values()) {
      advance(pod, stage);
      String object = json.writeValueAsString(pod).replace("\"@DECISION@\":\"\"", "@DECISION@");
      events.put(stage, TextTemplate.of("{\"type\":\"@TYPE@\",\"object\":" + object + "}"));
      if (stage == Stage.PENDING) {
        filter = TextTemplate.of("{\"Pod\":" + object + ",\"Nodes\":null,\"NodeNames\":" + json.writeValueAsString(nodeNames) + "}");
      }
    }
    return new PodTexts(events, Objects.requireNonNull(filter));
  }

  /**
   * A round's values for {@link PodTexts}: pod {@code i} in {@code namespace} with {@code uid}, asking
   * for {@code cards} cards of {@code memoryMiB} and {@code cores} each; {@link #placed} adds where it
   * went.
   */
  static Map<String, String> values(int i, String namespace, String uid, int cards, long memoryMiB, int cores) {
    Map<String, String> values = new HashMap<>(24);
    values.put("NAME", "warm-up-" + i);
    values.put("NAMESPACE", namespace);
    values.put("HASH", Integer.toHexString(0x10000000 + i / 16));
    values.put("UID", uid);
    for (Stage stage : Stage.values()) {
      values.put("RV" + stage.ordinal(), Integer.toString(8 * i + stage.ordinal() + 1));
    }
    values.put("CARDS", Integer.toString(cards));
    values.put("MEMORY", Long.toString(memoryMiB));
    values.put("CORES", Integer.toString(cores));
    return values;
  }

  /** Adds to a round's {@code values} the pod's {@code node} and {@code decision}: the annotations the scheduler's patch set (not empty). */
  void placed(Map<String, String> values, String node, Map<String, String> decision) {
    if (decision.isEmpty()) {
      throw new IllegalArgumentException("a placed pod's decision has annotations");
    }
    String members = json.writeValueAsString(decision);
    values.put("NODE", node);
    values.put("DECISION", members.substring(1, members.length() - 1));
  }

  /** One kind of pod's texts, filled in per round with {@link #values}. */
  static final class PodTexts {
    private final Map<Stage, TextTemplate> events;
    private final TextTemplate filter;

    private PodTexts(Map<Stage, TextTemplate> events, TextTemplate filter) {
      this.events = events;
      this.filter = filter;
    }

    /** The pod's watch event of {@code type} at {@code stage}, as the watch hands it over. */
    String event(String type, Stage stage, Map<String, String> values) {
      values.put("TYPE", type);
      return Objects.requireNonNull(events.get(stage)).fill(values);
    }

    /** kube-scheduler's filter request for the pod at {@link Stage#PENDING}. */
    byte[] filterRequest(Map<String, String> values) {
      return filter.fill(values).getBytes(StandardCharsets.UTF_8);
    }
  }

  /** A watch event of {@code type} carrying {@code object}, as the watch hands it over. */
  private String event(String type, ObjectNode object) {
    ObjectNode event = json.createObjectNode();
    event.put("type", type);
    event.set("object", object);
    return json.writeValueAsString(event);
  }

  /** Node {@code n}'s watch event with its device registration {@code register}; every fifth is cordoned and tainted. */
  String nodeEvent(String name, String register, int n, int cards) {
    ObjectNode node = json.createObjectNode();
    node.put("apiVersion", "v1");
    node.put("kind", "Node");
    ObjectNode metadata = node.putObject("metadata");
    metadata.put("name", name);
    metadata.put("uid", String.format(Locale.ROOT, "00000000-0000-4000-9000-%012x", n));
    metadata.put("resourceVersion", Integer.toString(n + 1));
    metadata.put("creationTimestamp", TIME);
    ObjectNode labels = metadata.putObject("labels");
    labels.put("kubernetes.io/hostname", name).put("kubernetes.io/os", "linux").put("kubernetes.io/arch", "amd64").put("gpu", "on");
    ObjectNode annotations = metadata.putObject("annotations");
    annotations.put(HamiAnnotations.NODE_REGISTER, register);
    annotations.put(NodeHealth.HANDSHAKE, "Requesting_2026.01.01 00:00:00");
    annotations.put("node.alpha.kubernetes.io/ttl", "0");
    annotations.put("volumes.kubernetes.io/controller-managed-attach-detach", "true");
    managedFields(metadata, "kubelet", "status");
    ObjectNode spec = node.putObject("spec");
    spec.put("podCIDR", "10.64.0.0/24");
    spec.putArray("podCIDRs").add("10.64.0.0/24");
    if (n % 5 == 4) {
      spec.put("unschedulable", true);
      spec.putArray("taints").addObject().put("key", "node.kubernetes.io/unschedulable").put("effect", "NoSchedule").put("timeAdded", TIME);
    }
    ObjectNode status = node.putObject("status");
    for (String section : new String[] {"capacity", "allocatable"}) {
      ObjectNode resources = status.putObject(section);
      resources.put("cpu", "96");
      resources.put("ephemeral-storage", "1919214400Ki");
      resources.put("hugepages-2Mi", "0");
      resources.put("memory", "1376Gi");
      resources.put("pods", "110");
      resources.put(schema.countResource(), Integer.toString(cards * 10));
    }
    ArrayNode conditions = status.putArray("conditions");
    for (String type : new String[] {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
      conditions.addObject().put("type", type).put("status", type.equals("Ready") ? "True" : "False").put("lastHeartbeatTime", TIME).put("lastTransitionTime", TIME)
          .put("reason", "Kubelet" + type).put("message", "kubelet reports " + type);
    }
    status.putArray("addresses").addObject().put("type", "InternalIP").put("address", "10.0.0." + (n % 250 + 1));
    status.putObject("daemonEndpoints").putObject("kubeletEndpoint").put("Port", 10250);
    ObjectNode info = status.putObject("nodeInfo");
    info.put("machineID", name).put("kernelVersion", "6.8.0").put("osImage", "Ubuntu 24.04 LTS").put("containerRuntimeVersion", "containerd://2.0.0").put("kubeletVersion", "v1.31.0");
    ObjectNode image = status.putArray("images").addObject();
    image.putArray("names").add("warm-up/main@sha256:00").add("warm-up/main:1");
    image.put("sizeBytes", 1_234_567_890L);
    return event("MODIFIED", node);
  }

  private void container(ObjectNode container, String name) {
    container.put("name", name);
    container.put("image", "warm-up/main:1");
    container.putArray("command").add("python").add("-m").add("serve");
    ArrayNode env = container.putArray("env");
    env.addObject().put("name", "MODE").put("value", "serve");
    env.addObject().put("name", "POD_NAME").putObject("valueFrom").putObject("fieldRef").put("apiVersion", "v1").put("fieldPath", "metadata.name");
    container.putArray("ports").addObject().put("containerPort", 8080).put("protocol", "TCP");
    ObjectNode resources = container.putObject("resources");
    ObjectNode limits = resources.putObject("limits");
    limits.put("cpu", "1");
    limits.put("memory", "8Gi");
    limits.put(schema.countResource(), "@CARDS@");
    if (!schema.memoryResource().isEmpty()) {
      limits.put(schema.memoryResource(), "@MEMORY@");
    }
    if (!schema.coresResource().isEmpty()) {
      limits.put(schema.coresResource(), "@CORES@");
    }
    resources.putObject("requests").put("cpu", "1").put("memory", "8Gi");
    container.putArray("volumeMounts").addObject().put("name", "data").put("mountPath", "/data");
    container.put("terminationMessagePath", "/dev/termination-log");
    container.put("terminationMessagePolicy", "File");
    container.put("imagePullPolicy", "IfNotPresent");
  }

  /** Appends a managed-fields entry of {@code manager} (for {@code subresource}, if any) to {@code metadata}. */
  private static void managedFields(ObjectNode metadata, String manager, @Nullable String subresource) {
    ArrayNode fields = metadata.has("managedFields") ? (ArrayNode) metadata.get("managedFields") : metadata.putArray("managedFields");
    ObjectNode entry = fields.addObject();
    entry.put("manager", manager).put("operation", "Update").put("apiVersion", "v1").put("time", TIME).put("fieldsType", "FieldsV1");
    if (subresource != null) {
      entry.put("subresource", subresource);
    }
    ObjectNode v1 = entry.putObject("fieldsV1");
    v1.putObject("f:metadata").putObject("f:labels").putObject(".");
    v1.putObject("f:spec").putObject("f:containers").putObject("k:{\"name\":\"main\"}").putObject("f:resources");
  }
}
