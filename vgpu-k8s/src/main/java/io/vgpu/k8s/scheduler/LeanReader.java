package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Affinity;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerState;
import io.fabric8.kubernetes.api.model.ContainerStateTerminated;
import io.fabric8.kubernetes.api.model.ContainerStatus;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeSpec;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodStatus;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.exc.StreamReadException;

/**
 * Reads a pod or a node from the API server's JSON with a streaming parser, keeping only what the
 * scheduler reads and skipping the rest without building it: no full {@code Pod} (managed fields,
 * volumes, environment, conditions, container statuses, a node's images) is made and then copied.
 *
 * <p>Two shapes. {@link #forCache} gives exactly {@link LeanStore}'s lean pods and nodes, what the
 * informer caches keep ({@link LeanStore#lean(Pod, Set, LeanStore.Oversize)} and {@link
 * LeanStore#lean(Node)} describe it; {@code LeanReaderTest} holds the two to the same result). {@link
 * #forRequest} gives what the extender's filter reads of the pod kube-scheduler sends: its name,
 * namespace, UID, versions and times, every label and annotation; its node, scheduler name, node selector
 * and affinity; its containers' and init containers' names, restart policies and resources, and its
 * overhead; its phase.
 */
final class LeanReader {
  /** Told of each kept annotation dropped for its length: the pod's key, the annotation and the value's length. */
  @FunctionalInterface
  interface Dropped {
    void dropped(String key, String annotation, int length);
  }

  /** Keeps every annotation, label and resource: the extender's request. */
  private final boolean whole;
  /** The container resources kept (the cache's shape). */
  private final Set<String> resources;
  private final Dropped dropped;

  private LeanReader(boolean whole, Set<String> resources, Dropped dropped) {
    this.whole = whole;
    this.resources = resources;
    this.dropped = dropped;
  }

  /**
   * The informer caches' shape.
   *
   * @param resources the container resources kept (the CPU and the vendor's device resources)
   * @param dropped told of each kept annotation over its bound, which is replaced by {@link LeanStore#DROPPED}
   */
  static LeanReader forCache(Set<String> resources, Dropped dropped) {
    return new LeanReader(false, Set.copyOf(resources), dropped);
  }

  /** The shape the extender's filter reads of the pod it is asked about. */
  static LeanReader forRequest() {
    return new LeanReader(true, Set.of(), (key, annotation, length) -> {});
  }

  // ---------------------------------------------------------------------------------------------
  // Pods

  /** A pod; the parser is on the object's {@code START_OBJECT} (or {@code null}, which gives null). */
  @Nullable Pod pod(JsonParser p) {
    if (p.currentToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "a pod");
    p.nextToken();
    return podFrom(p, null, null);
  }

  /**
   * The rest of a pod whose {@code apiVersion} and {@code kind} were read already: the parser is on the
   * next property name, or on the object's {@code END_OBJECT}; it is left on that {@code END_OBJECT}.
   */
  Pod podFrom(JsonParser p, @Nullable String apiVersion, @Nullable String kind) {
    Pod pod = new Pod();
    // The model's defaults ("v1", "Pod") stay unless the object names its own.
    if (apiVersion != null) {
      pod.setApiVersion(apiVersion);
    }
    if (kind != null) {
      pod.setKind(kind);
    }
    List<String[]> drops = whole ? null : new ArrayList<>(0);
    for (JsonToken t = p.currentToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
      String name = p.currentName();
      p.nextToken();
      switch (name) {
        case "apiVersion" -> pod.setApiVersion(string(p));
        case "kind" -> pod.setKind(string(p));
        case "metadata" -> pod.setMetadata(podMeta(p, drops));
        case "spec" -> pod.setSpec(podSpec(p));
        case "status" -> pod.setStatus(podStatus(p));
        default -> p.skipChildren();
      }
    }
    if (drops != null && !drops.isEmpty()) {
      String key = key(pod.getMetadata());
      drops.forEach(d -> dropped.dropped(key, d[0], Integer.parseInt(d[1])));
    }
    // The cache holds its pods for long: the model's empty collections go. A request's pod is short-lived.
    return whole ? pod : LeanStore.withoutEmptyCollections(pod);
  }

  private static String key(@Nullable ObjectMeta meta) {
    if (meta == null) {
      return "";
    }
    String namespace = meta.getNamespace();
    return namespace == null || namespace.isEmpty() ? String.valueOf(meta.getName()) : namespace + "/" + meta.getName();
  }

  private @Nullable ObjectMeta podMeta(JsonParser p, @Nullable List<String[]> drops) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "metadata");
    ObjectMeta meta = new ObjectMeta();
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      if (!commonMeta(p, name, meta)) {
        switch (name) {
          case "annotations" -> meta.setAnnotations(whole ? stringMap(p) : keptAnnotations(p, drops));
          case "labels" -> meta.setLabels(whole ? stringMap(p) : keptLabels(p));
          default -> p.skipChildren();
        }
      }
    }
    return meta;
  }

  /** The metadata both shapes and both kinds keep; false when {@code name} is none of it (nothing read). */
  private static boolean commonMeta(JsonParser p, String name, ObjectMeta meta) {
    switch (name) {
      case "name" -> meta.setName(string(p));
      case "namespace" -> meta.setNamespace(string(p));
      case "uid" -> meta.setUid(string(p));
      case "resourceVersion" -> meta.setResourceVersion(string(p));
      case "creationTimestamp" -> meta.setCreationTimestamp(string(p));
      case "deletionTimestamp" -> meta.setDeletionTimestamp(string(p));
      default -> {
        return false;
      }
    }
    return true;
  }

  /** The {@linkplain LeanStore#KEPT_POD_ANNOTATIONS kept annotations}; one over its bound becomes {@link LeanStore#DROPPED}. */
  private static @Nullable Map<String, String> keptAnnotations(JsonParser p, List<String[]> drops) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "annotations");
    Map<String, String> kept = null;
    for (String key = p.nextName(); key != null; key = p.nextName()) {
      p.nextToken();
      Integer max = LeanStore.KEPT_POD_ANNOTATIONS.get(key);
      if (max == null || p.currentToken() == JsonToken.VALUE_NULL) {
        p.skipChildren();
        continue;
      }
      if (kept == null) {
        kept = new LinkedHashMap<>();
      }
      // The length is known before the value is made a string: an oversized value never becomes one.
      int length = stringLength(p);
      if (length > max) {
        drops.add(new String[] {key, Integer.toString(length)});
        kept.put(key, LeanStore.DROPPED);
      } else {
        kept.put(key, string(p));
      }
    }
    return kept;
  }

  private static @Nullable Map<String, String> keptLabels(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "labels");
    Map<String, String> kept = null;
    for (String key = p.nextName(); key != null; key = p.nextName()) {
      p.nextToken();
      Integer max = LeanStore.KEPT_POD_LABELS.get(key);
      if (max == null || p.currentToken() == JsonToken.VALUE_NULL || stringLength(p) > max) {
        p.skipChildren();
        continue;
      }
      if (kept == null) {
        kept = new LinkedHashMap<>(2);
      }
      kept.put(key, string(p));
    }
    return kept;
  }

  private @Nullable PodSpec podSpec(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "spec");
    PodSpec spec = new PodSpec();
    if (!whole) {
      // The cache keeps an overhead only when it names the CPU.
      spec.setOverhead(null);
    }
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      switch (name) {
        case "nodeName" -> spec.setNodeName(string(p));
        case "containers" -> spec.setContainers(containers(p));
        case "initContainers" -> spec.setInitContainers(containers(p));
        case "overhead" -> spec.setOverhead(quantities(p, whole ? null : Set.of("cpu")));
        case "schedulerName" -> {
          if (whole) {
            spec.setSchedulerName(string(p));
          } else {
            p.skipChildren();
          }
        }
        case "nodeSelector" -> {
          if (whole) {
            spec.setNodeSelector(stringMap(p));
          } else {
            p.skipChildren();
          }
        }
        case "affinity" -> {
          // Rare and nested: read as a whole, by the model's own binding.
          if (whole && !isNull(p)) {
            spec.setAffinity(p.readValueAs(Affinity.class));
          } else {
            p.skipChildren();
          }
        }
        default -> p.skipChildren();
      }
    }
    return spec;
  }

  private @Nullable List<Container> containers(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_ARRAY, "a container list");
    List<Container> out = new ArrayList<>(2);
    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
      expect(p, JsonToken.START_OBJECT, "a container");
      Container c = new Container();
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        p.nextToken();
        switch (name) {
          case "name" -> c.setName(string(p));
          case "restartPolicy" -> c.setRestartPolicy(string(p));
          case "resources" -> c.setResources(resources(p));
          default -> p.skipChildren();
        }
      }
      if (!whole) {
        LeanStore.withoutEmptyCollections(c);
      }
      out.add(c);
    }
    return out;
  }

  /** A container's requests and limits of the kept resources; null when it keeps none. */
  private @Nullable ResourceRequirements resources(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "resources");
    Map<String, Quantity> requests = null;
    Map<String, Quantity> limits = null;
    boolean sawRequests = false;
    boolean sawLimits = false;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      switch (name) {
        case "requests" -> {
          requests = quantities(p, whole ? null : resources);
          sawRequests = true;
        }
        case "limits" -> {
          limits = quantities(p, whole ? null : resources);
          sawLimits = true;
        }
        default -> p.skipChildren();
      }
    }
    if (!whole && requests == null && limits == null) {
      return null;
    }
    ResourceRequirements r = new ResourceRequirements();
    if (!whole || sawRequests) {
      r.setRequests(requests);
    }
    if (!whole || sawLimits) {
      r.setLimits(limits);
    }
    return r;
  }

  /** The quantities named in {@code kept} (all when null); null when none is kept (the cache's shape) or the map is null. */
  private static @Nullable Map<String, Quantity> quantities(JsonParser p, @Nullable Set<String> kept) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "a resource list");
    Map<String, Quantity> out = kept == null ? new LinkedHashMap<>(4) : null;
    for (String key = p.nextName(); key != null; key = p.nextName()) {
      p.nextToken();
      if (kept != null && !kept.contains(key)) {
        p.skipChildren();
        continue;
      }
      if (out == null) {
        out = new LinkedHashMap<>(4);
      }
      out.put(key, quantity(p));
    }
    return out;
  }

  private static @Nullable Quantity quantity(JsonParser p) {
    return switch (p.currentToken()) {
      case VALUE_NULL -> null;
      case VALUE_STRING, VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> new Quantity(p.getString());
      case START_OBJECT -> {
        // The model's other form, {"amount": ..., "format": ...}.
        String amount = null;
        String format = null;
        for (String name = p.nextName(); name != null; name = p.nextName()) {
          p.nextToken();
          switch (name) {
            case "amount" -> amount = p.getValueAsString();
            case "format" -> format = p.getValueAsString();
            default -> p.skipChildren();
          }
        }
        yield format == null ? new Quantity(amount) : new Quantity(amount, format);
      }
      default -> throw new StreamReadException(p, "a quantity is a string, not " + p.currentToken());
    };
  }

  private @Nullable PodStatus podStatus(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "status");
    PodStatus status = new PodStatus();
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      switch (name) {
        case "phase" -> status.setPhase(string(p));
        case "initContainerStatuses" -> {
          List<ContainerStatus> init = whole ? null : initStatuses(p);
          if (init == null) {
            p.skipChildren();
          } else if (!init.isEmpty()) {
            status.setInitContainerStatuses(init);
          }
        }
        default -> p.skipChildren();
      }
    }
    return status;
  }

  /** Each init container's name and, when it terminated, its exit code. */
  private static @Nullable List<ContainerStatus> initStatuses(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_ARRAY, "initContainerStatuses");
    List<ContainerStatus> out = new ArrayList<>(2);
    for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) {
      expect(p, JsonToken.START_OBJECT, "a container status");
      ContainerStatus lean = new ContainerStatus();
      for (String name = p.nextName(); name != null; name = p.nextName()) {
        p.nextToken();
        switch (name) {
          case "name" -> lean.setName(string(p));
          case "state" -> {
            ContainerStateTerminated terminated = terminated(p);
            if (terminated != null) {
              ContainerState state = new ContainerState();
              state.setTerminated(terminated);
              lean.setState(state);
            }
          }
          default -> p.skipChildren();
        }
      }
      out.add(lean);
    }
    return out;
  }

  /** A container state's {@code terminated} with its exit code only; null when the container has not terminated. */
  private static @Nullable ContainerStateTerminated terminated(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "state");
    ContainerStateTerminated terminated = null;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      if (!name.equals("terminated") || isNull(p)) {
        p.skipChildren();
        continue;
      }
      expect(p, JsonToken.START_OBJECT, "terminated");
      terminated = new ContainerStateTerminated();
      for (String field = p.nextName(); field != null; field = p.nextName()) {
        p.nextToken();
        if (field.equals("exitCode") && !isNull(p)) {
          terminated.setExitCode(p.getValueAsInt());
        } else {
          p.skipChildren();
        }
      }
    }
    return terminated;
  }

  // ---------------------------------------------------------------------------------------------
  // Nodes

  /** A node; the parser is on the object's {@code START_OBJECT} (or {@code null}, which gives null). */
  static @Nullable Node node(JsonParser p) {
    if (p.currentToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "a node");
    p.nextToken();
    return nodeFrom(p, null, null);
  }

  /** As {@link #podFrom}, for a node: every label and annotation, whether it is unschedulable, its allocatable resources. */
  static Node nodeFrom(JsonParser p, @Nullable String apiVersion, @Nullable String kind) {
    Node node = new Node();
    if (apiVersion != null) {
      node.setApiVersion(apiVersion);
    }
    if (kind != null) {
      node.setKind(kind);
    }
    for (JsonToken t = p.currentToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
      String name = p.currentName();
      p.nextToken();
      switch (name) {
        case "apiVersion" -> node.setApiVersion(string(p));
        case "kind" -> node.setKind(string(p));
        case "metadata" -> node.setMetadata(nodeMeta(p));
        case "spec" -> node.setSpec(nodeSpec(p));
        case "status" -> node.setStatus(nodeStatus(p));
        default -> p.skipChildren();
      }
    }
    return node;
  }

  private static @Nullable ObjectMeta nodeMeta(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "metadata");
    ObjectMeta meta = new ObjectMeta();
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      if (!commonMeta(p, name, meta)) {
        switch (name) {
          case "annotations" -> {
            Map<String, String> annotations = stringMap(p);
            if (annotations != null && !annotations.isEmpty()) {
              meta.setAnnotations(annotations);
            }
          }
          case "labels" -> {
            Map<String, String> labels = stringMap(p);
            if (labels != null) {
              meta.setLabels(labels);
            }
          }
          default -> p.skipChildren();
        }
      }
    }
    return meta;
  }

  private static @Nullable NodeSpec nodeSpec(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "spec");
    Boolean unschedulable = null;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      if (name.equals("unschedulable") && (p.currentToken() == JsonToken.VALUE_TRUE || p.currentToken() == JsonToken.VALUE_FALSE)) {
        unschedulable = p.currentToken() == JsonToken.VALUE_TRUE;
      } else {
        p.skipChildren();
      }
    }
    if (unschedulable == null) {
      return null;
    }
    NodeSpec spec = new NodeSpec();
    spec.setUnschedulable(unschedulable);
    return spec;
  }

  private static @Nullable NodeStatus nodeStatus(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "status");
    NodeStatus status = null;
    boolean nullAllocatable = false;
    for (String name = p.nextName(); name != null; name = p.nextName()) {
      p.nextToken();
      if (name.equals("allocatable")) {
        Map<String, Quantity> allocatable = quantities(p, null);
        if (allocatable != null) {
          status = new NodeStatus();
          status.setAllocatable(allocatable);
        }
        nullAllocatable = allocatable == null;
      } else {
        p.skipChildren();
      }
    }
    // A status without allocatable resources is kept with none (the model's empty map); one whose
    // allocatable is null is not kept.
    if (status == null && !nullAllocatable) {
      status = new NodeStatus();
      status.setAllocatable(new LinkedHashMap<>());
    }
    return status;
  }

  // ---------------------------------------------------------------------------------------------
  // Scalars

  private static boolean isNull(JsonParser p) {
    return p.currentToken() == JsonToken.VALUE_NULL;
  }

  private static void expect(JsonParser p, JsonToken token, String what) {
    if (p.currentToken() != token) {
      throw new StreamReadException(p, what + " must be " + (token == JsonToken.START_OBJECT ? "an object" : "an array") + ", not " + p.currentToken());
    }
  }

  /** A string value (a number or boolean as its text, as the model's binding reads one); null for null. */
  static @Nullable String string(JsonParser p) throws JacksonException {
    JsonToken t = p.currentToken();
    if (t == JsonToken.VALUE_STRING) {
      return p.getString();
    }
    if (t == JsonToken.VALUE_NULL) {
      return null;
    }
    if (t != null && t.isScalarValue()) {
      return p.getValueAsString();
    }
    throw new StreamReadException(p, "expected a string, not " + t);
  }

  /** The length of a string value without making it a string; 0 for other scalars. */
  private static int stringLength(JsonParser p) {
    JsonToken t = p.currentToken();
    if (t == JsonToken.VALUE_STRING) {
      return p.getStringLength();
    }
    if (t != null && t.isScalarValue()) {
      return 0;
    }
    throw new StreamReadException(p, "expected a string, not " + t);
  }

  private static @Nullable Map<String, String> stringMap(JsonParser p) {
    if (isNull(p)) {
      return null;
    }
    expect(p, JsonToken.START_OBJECT, "a map of strings");
    Map<String, String> out = new LinkedHashMap<>();
    for (String key = p.nextName(); key != null; key = p.nextName()) {
      p.nextToken();
      out.put(key, string(p));
    }
    return out;
  }
}
