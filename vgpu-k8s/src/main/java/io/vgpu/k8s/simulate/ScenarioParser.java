package io.vgpu.k8s.simulate;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.Device;
import io.vgpu.api.PodRef;
import io.vgpu.core.QuotaLimits;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.config.DeviceConfigReader;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.pod.PodRefs;
import io.vgpu.k8s.pod.Quantities;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.JacksonTrees;
import io.vgpu.k8s.yaml.Position;
import io.vgpu.k8s.yaml.YamlList;
import io.vgpu.k8s.yaml.YamlMap;
import io.vgpu.k8s.yaml.YamlNode;
import io.vgpu.k8s.yaml.YamlReader;
import io.vgpu.k8s.yaml.YamlScalar;
import io.vgpu.mock.GpuProfile;
import io.vgpu.mock.GpuProfiles;
import io.vgpu.mock.MockDeviceSource;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;

/**
 * Reads scenario files (YAML or JSON) into {@link Scenario}s. Keys of the scenario's own structure are
 * checked; inside a pod manifest any field is accepted, but its resource quantities must be well-formed.
 * Every error is an {@link InputException} naming the field, the value and {@code file:line:column}.
 */
public final class ScenarioParser {
  private static final List<String> TOP_KEYS = List.of("stack", "config", "nodes", "resourceQuotas", "queues", "events", "checks");
  private static final List<String> NODE_KEYS = List.of("name", "labels", "annotations", "gpus", "devices");
  private static final List<String> GPUS_KEYS = List.of("profile", "count", "uuidPrefix", "numa");
  private static final List<String> DEVICE_KEYS = List.of("uuid", "model", "memoryMiB", "numa", "health", "index");
  private static final List<String> QUOTA_KEYS = List.of("namespace", "name", "hard");
  private static final List<String> EVENT_KEYS = List.of("create", "delete", "patch", "setConfig", "restart", "wait", "scrape");
  private static final List<String> PATCH_KEYS = List.of("pod", "as", "metadata");
  private static final List<String> PATCH_METADATA_KEYS = List.of("annotations", "labels");
  /** A ServiceAccount's user: {@code system:serviceaccount:} then a namespace (a DNS label) and a name (a DNS subdomain). */
  private static final Pattern SERVICE_ACCOUNT_USER =
      Pattern.compile(Pattern.quote(ScenarioEvent.Patch.SERVICE_ACCOUNT_PREFIX) + "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");
  /** The longest {@code wait}: a scenario is a test, not a soak. */
  private static final long MAX_WAIT_MILLIS = 3_600_000;

  private final DeviceConfigReader configReader;

  /**
   * A parser that accepts, as {@code gpuSchedulerPolicy}, HAMi's policies and the named placement
   * policies given.
   */
  public ScenarioParser(Set<String> placementPolicies) {
    this.configReader = new DeviceConfigReader(placementPolicies);
  }

  /**
   * Parses a scenario file.
   *
   * @throws InputException on any error in the file
   */
  public Scenario parse(Path file) {
    return parse(YamlReader.read(file));
  }

  /**
   * Parses a scenario document.
   *
   * @throws InputException on any error in the document
   */
  public Scenario parse(YamlNode document) {
    YamlMap root = document.asMap("scenario");
    root.requireKnownKeys("the scenario", TOP_KEYS);
    Optional<YamlMap> configWritten = root.get("config").map(c -> c.asMap("config"));
    DeviceConfig config = configWritten.map(c -> configReader.apply(DeviceConfig.DEFAULT, c, "config")).orElse(DeviceConfig.DEFAULT);
    List<NodeSpec> nodes = root.get("nodes").map(n -> nodes(n.asList("nodes"))).orElse(List.of());
    Map<String, QuotaLimits> quotas =
        root.get("resourceQuotas").map(q -> quotas(q.asList("resourceQuotas"), config)).orElse(Map.of());
    Set<String> nodeNames = new HashSet<>();
    nodes.forEach(n -> nodeNames.add(n.name()));
    List<ScenarioEvent> events = root.get("events").map(e -> events(e.asList("events"), config, nodeNames)).orElse(List.of());
    Optional<YamlList> checks = root.get("checks").map(c -> c.asList("checks"));
    Stack stack = root.get("stack").map(ScenarioParser::stack).orElse(Stack.VGPU);
    List<ScenarioEvent.CreateQueue> queues = root.get("queues").map(q -> queues(q.asList("queues"))).orElse(List.of());
    requireKnownParents(queues, events);
    return new Scenario(config, nodes, quotas, events, configWritten, checks, stack, queues);
  }

  private static Stack stack(YamlNode node) {
    String text = node.asScalar("stack").asString("stack").trim();
    for (Stack s : Stack.values()) {
      if (s.key().equals(text)) {
        return s;
      }
    }
    throw new InputException(node.position(), "stack: '" + text + "' is not vgpu or kai");
  }

  // --- KAI queues

  private static List<ScenarioEvent.CreateQueue> queues(YamlList list) {
    List<ScenarioEvent.CreateQueue> out = new ArrayList<>();
    for (int i = 0; i < list.items().size(); i++) {
      String field = "queues[" + i + "]";
      YamlMap map = list.items().get(i).asMap(field);
      String kind = KaiObjectParser.kind(map, field);
      if (!kind.equals("Pod") && !kind.equals(KaiObjectParser.QUEUE_KIND)) {
        throw new InputException(map.require("kind", field).position(), field + ".kind: expected Queue, got '" + kind + "'");
      }
      out.add(KaiObjectParser.queue(map, field, map.position()));
    }
    return out;
  }

  /**
   * Every queue is named once, and every parent a queue names exists when the queue is created: the
   * scenario's queues may name each other in any order; a queue created by an event may name those and
   * the ones created before it.
   */
  private static void requireKnownParents(List<ScenarioEvent.CreateQueue> initial, List<ScenarioEvent> events) {
    Set<String> known = new HashSet<>();
    for (ScenarioEvent.CreateQueue q : initial) {
      if (!known.add(q.spec().name())) {
        throw new InputException(q.position(), "queues: queue '" + q.spec().name() + "' is listed twice");
      }
    }
    for (ScenarioEvent.CreateQueue q : initial) {
      q.spec().parent().filter(p -> !known.contains(p)).ifPresent(p -> {
        throw new InputException(q.position(), "queues: queue '" + q.spec().name() + "' names parent '" + p + "', which is not a queue of the scenario");
      });
    }
    Map<String, ScenarioEvent.CreateQueue> tree = new LinkedHashMap<>();
    initial.forEach(q -> tree.put(q.spec().name(), q));
    initial.forEach(q -> requireNoCycle(q, tree, "queues"));
    for (ScenarioEvent e : events) {
      if (e instanceof ScenarioEvent.CreateQueue q) {
        q.spec().parent().filter(p -> !known.contains(p)).ifPresent(p -> {
          throw new InputException(q.position(), q.describe() + ": parent '" + p + "' is not a queue at that point of the scenario");
        });
        known.add(q.spec().name());
        tree.put(q.spec().name(), q);
        requireNoCycle(q, tree, q.describe());
      } else if (e instanceof ScenarioEvent.DeleteObject d && d.kind().equals(KaiObjectParser.QUEUE_KIND)) {
        known.remove(d.name());
        tree.remove(d.name());
      }
    }
  }

  /** A queue's chain of parents must end at a top-level queue. */
  private static void requireNoCycle(ScenarioEvent.CreateQueue queue, Map<String, ScenarioEvent.CreateQueue> tree, String field) {
    List<String> chain = new ArrayList<>();
    chain.add(queue.spec().name());
    for (Optional<String> p = queue.spec().parent(); p.isPresent(); ) {
      if (chain.contains(p.get())) {
        chain.add(p.get());
        throw new InputException(queue.position(), field + ": queue '" + queue.spec().name() + "' has a cycle of parents: " + String.join(" -> ", chain));
      }
      chain.add(p.get());
      ScenarioEvent.CreateQueue parent = tree.get(p.get());
      p = parent == null ? Optional.empty() : parent.spec().parent();
    }
  }

  // --- Nodes

  private static List<NodeSpec> nodes(YamlList list) {
    List<NodeSpec> out = new ArrayList<>();
    Map<String, String> nodeOfUuid = new HashMap<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < list.items().size(); i++) {
      String field = "nodes[" + i + "]";
      YamlMap map = list.items().get(i).asMap(field);
      map.requireKnownKeys(field, NODE_KEYS);
      String name = requireNonEmpty(map, "name", field);
      if (!names.add(name)) {
        throw new InputException(map.require("name", field).position(), field + ".name: node '" + name + "' is listed twice");
      }
      if (map.get("gpus").isPresent() && map.get("devices").isPresent()) {
        throw new InputException(map.position(), field + ": give either gpus or devices, not both");
      }
      List<Device> devices = new ArrayList<>();
      int nodePosition = i;
      map.get("gpus").ifPresent(g -> devices.addAll(profileDevices(g.asMap(field + ".gpus"), field + ".gpus", nodePosition)));
      map.get("devices").ifPresent(d -> devices.addAll(explicitDevices(d.asList(field + ".devices"), field + ".devices")));
      for (Device d : devices) {
        String other = nodeOfUuid.putIfAbsent(d.uuid(), name);
        if (other != null) {
          throw new InputException(map.position(), field + ": device " + d.uuid() + " is also on node " + other);
        }
      }
      out.add(
          new NodeSpec(
              name,
              stringMap(map.get("labels"), field + ".labels"),
              stringMap(map.get("annotations"), field + ".annotations"),
              devices,
              map.position()));
    }
    return out;
  }

  private static List<Device> profileDevices(YamlMap gpus, String field, int nodePosition) {
    gpus.requireKnownKeys(field, GPUS_KEYS);
    YamlNode profileNode = gpus.require("profile", field);
    String profileName = profileNode.asScalar(field + ".profile").asString(field + ".profile");
    GpuProfile profile =
        GpuProfiles.find(profileName)
            .orElseThrow(
                () ->
                    new InputException(
                        profileNode.position(),
                        field + ".profile: unknown GPU profile '" + profileName + "' (known: "
                            + String.join(", ", GpuProfiles.all().stream().map(GpuProfile::profile).toList()) + ")"));
    int count = gpus.get("count").map(c -> c.asScalar(field + ".count").asInt(field + ".count", 0, 100)).orElse(1);
    int numa = gpus.get("numa").map(c -> c.asScalar(field + ".numa").asInt(field + ".numa", 0, 1024)).orElse(0);
    String prefix =
        gpus.get("uuidPrefix")
            .map(p -> p.asScalar(field + ".uuidPrefix").asString(field + ".uuidPrefix"))
            .orElse(String.format("GPU-%08x-0000-0000-0000-0000000000", nodePosition));
    return new MockDeviceSource(profile, count, prefix, numa).devices();
  }

  private static List<Device> explicitDevices(YamlList list, String field) {
    List<Device> out = new ArrayList<>();
    for (int i = 0; i < list.items().size(); i++) {
      String f = field + "[" + i + "]";
      YamlMap d = list.items().get(i).asMap(f);
      d.requireKnownKeys(f, DEVICE_KEYS);
      String uuid = requireNonEmpty(d, "uuid", f);
      String model = requireNonEmpty(d, "model", f);
      long memory = d.require("memoryMiB", f).asScalar(f + ".memoryMiB").asLong(f + ".memoryMiB", 0, Integer.MAX_VALUE);
      int numa = d.get("numa").map(n -> n.asScalar(f + ".numa").asInt(f + ".numa", 0, 1024)).orElse(0);
      boolean health = d.get("health").map(n -> n.asScalar(f + ".health").asBoolean(f + ".health")).orElse(true);
      int index = d.get("index").map(n -> n.asScalar(f + ".index").asInt(f + ".index", 0, 1024)).orElse(i);
      out.add(new Device(uuid, index, model, memory, numa, health, ""));
    }
    return out;
  }

  /** The value of {@code key}, which must be present and not blank. */
  private static String requireNonEmpty(YamlMap map, String key, String field) {
    String f = field + "." + key;
    YamlNode node = map.require(key, field);
    String value = node.asScalar(f).asString(f);
    if (value.isBlank()) {
      throw new InputException(node.position(), f + ": must not be empty");
    }
    return value;
  }

  private static Map<String, String> stringMap(Optional<YamlNode> node, String field) {
    Map<String, String> out = new LinkedHashMap<>();
    if (node.isEmpty() || isNull(node.get())) {
      return out;
    }
    for (YamlMap.Entry e : node.get().asMap(field).entries().values()) {
      YamlScalar value = e.value().asScalar(YamlMap.path(field, e.key()));
      out.put(e.key(), value.kind() == YamlScalar.Kind.NULL ? "" : value.text());
    }
    return out;
  }

  private static boolean isNull(YamlNode node) {
    return node instanceof YamlScalar s && s.kind() == YamlScalar.Kind.NULL;
  }

  // --- Quotas

  private static Map<String, QuotaLimits> quotas(YamlList list, DeviceConfig config) {
    Map<String, QuotaLimits> out = new LinkedHashMap<>();
    String memoryKey = "limits." + config.resourceMemoryName();
    String coresKey = "limits." + config.resourceCoreName();
    for (int i = 0; i < list.items().size(); i++) {
      String field = "resourceQuotas[" + i + "]";
      YamlMap q = list.items().get(i).asMap(field);
      q.requireKnownKeys(field, QUOTA_KEYS);
      String namespace = requireNonEmpty(q, "namespace", field);
      q.get("name").ifPresent(n -> n.asScalar(field + ".name").asString(field + ".name"));
      QuotaLimits limits = out.getOrDefault(namespace, QuotaLimits.NONE);
      long memory = limits.memoryMiB();
      long cores = limits.cores();
      for (YamlMap.Entry e : q.require("hard", field).asMap(field + ".hard").entries().values()) {
        String f = field + ".hard." + e.key();
        if (e.key().equals(memoryKey)) {
          memory = quotaAmount(e.value(), f);
        } else if (e.key().equals(coresKey)) {
          cores = quotaAmount(e.value(), f);
        } else {
          quotaAmount(e.value(), f);
        }
      }
      out.put(namespace, new QuotaLimits(memory, cores));
    }
    return out;
  }

  private static long quotaAmount(YamlNode node, String field) {
    String text = node.asScalar(field).asString(field).trim();
    BigDecimal value = quantity(text, node, field);
    if (value.signum() < 0 || !Quantities.isInteger(value)) {
      throw new InputException(node.position(), field + ": '" + text + "' must be a non-negative whole number");
    }
    try {
      return value.longValueExact();
    } catch (ArithmeticException e) {
      throw new InputException(node.position(), field + ": '" + text + "' is too large");
    }
  }

  private static BigDecimal quantity(String text, YamlNode node, String field) {
    try {
      return Quantities.parse(text);
    } catch (IllegalArgumentException e) {
      throw new InputException(node.position(), field + ": " + e.getMessage());
    }
  }

  // --- Events

  private List<ScenarioEvent> events(YamlList list, DeviceConfig initial, Set<String> nodeNames) {
    List<ScenarioEvent> out = new ArrayList<>();
    DeviceConfig config = initial;
    for (int i = 0; i < list.items().size(); i++) {
      String field = "events[" + i + "]";
      YamlMap event = list.items().get(i).asMap(field);
      event.requireKnownKeys(field, EVENT_KEYS);
      if (event.entries().size() != 1) {
        throw new InputException(event.position(), field + ": an event has exactly one of " + String.join(", ", EVENT_KEYS));
      }
      YamlMap.Entry e = event.entries().values().iterator().next();
      String f = field + "." + e.key();
      switch (e.key()) {
        case "create" -> out.add(createAny(e.value(), f, e.keyPosition()));
        case "delete" -> {
          String target = e.value().asScalar(f).asString(f).trim();
          Optional<ScenarioEvent.DeleteObject> object = KaiObjectParser.delete(target, e.value(), f, e.keyPosition());
          out.add(object.isPresent() ? object.get() : new ScenarioEvent.Delete(e.keyPosition(), podRef(target, e.value(), f)));
        }
        case "setConfig" -> {
          YamlMap changes = e.value().asMap(f);
          config = configReader.apply(config, changes, f);
          out.add(new ScenarioEvent.SetConfig(e.keyPosition(), config, summary(changes), changes));
        }
        case "patch" -> out.add(patch(e.value(), f, e.keyPosition()));
        case "restart" -> out.add(new ScenarioEvent.Restart(e.keyPosition(), component(e.value(), f, nodeNames)));
        case "wait" -> {
          double seconds = e.value().asScalar(f).asDouble(f);
          if (!(seconds >= 0) || seconds * 1000 > MAX_WAIT_MILLIS) {
            throw new InputException(e.value().position(), f + ": " + e.value().asScalar(f).text() + " is not a number of seconds between 0 and " + MAX_WAIT_MILLIS / 1000);
          }
          out.add(new ScenarioEvent.Wait(e.keyPosition(), Duration.ofMillis(Math.round(seconds * 1000))));
        }
        case "scrape" -> {
          YamlNode value = e.value();
          boolean empty = isNull(value) || (value instanceof YamlMap m && m.entries().isEmpty());
          if (!empty) {
            throw new InputException(value.position(), f + ": takes no arguments (write scrape: {})");
          }
          out.add(new ScenarioEvent.Scrape(e.keyPosition()));
        }
        default -> throw new IllegalStateException("event key " + e.key() + " is listed but not read");
      }
    }
    return out;
  }

  private static String component(YamlNode node, String field, Set<String> nodeNames) {
    String text = node.asScalar(field).asString(field).trim();
    if (text.equals(ScenarioEvent.Restart.SCHEDULER)) {
      return text;
    }
    if (text.startsWith(ScenarioEvent.Restart.DEVICE_PLUGIN_PREFIX)) {
      String nodeName = text.substring(ScenarioEvent.Restart.DEVICE_PLUGIN_PREFIX.length());
      if (!nodeNames.contains(nodeName)) {
        throw new InputException(node.position(), field + ": '" + text + "' names no node of the scenario (nodes: " + String.join(", ", new TreeSet<>(nodeNames)) + ")");
      }
      return text;
    }
    throw new InputException(node.position(), field + ": '" + text + "' is not a component (scheduler, or device-plugin/<node>)");
  }

  private static ScenarioEvent.Patch patch(YamlNode node, String field, Position at) {
    YamlMap map = node.asMap(field);
    map.requireKnownKeys(field, PATCH_KEYS);
    YamlNode pod = map.require("pod", field);
    PodRef ref = podRef(pod.asScalar(field + ".pod").asString(field + ".pod").trim(), pod, field + ".pod");
    String as = ScenarioEvent.Patch.TENANT;
    Optional<YamlNode> asNode = map.get("as");
    if (asNode.isPresent()) {
      as = asNode.get().asScalar(field + ".as").asString(field + ".as").trim();
      if (!as.equals(ScenarioEvent.Patch.TENANT) && !SERVICE_ACCOUNT_USER.matcher(as).matches()) {
        throw new InputException(asNode.get().position(), field + ".as: '" + as + "' is not a user of the lab (tenant, or system:serviceaccount:NAMESPACE:NAME)");
      }
    }
    YamlNode metadataNode = map.require("metadata", field);
    YamlMap metadata = metadataNode.asMap(field + ".metadata");
    metadata.requireKnownKeys(field + ".metadata", PATCH_METADATA_KEYS);
    Map<String, Optional<String>> annotations = patchValues(metadata.get("annotations"), field + ".metadata.annotations");
    Map<String, Optional<String>> labels = patchValues(metadata.get("labels"), field + ".metadata.labels");
    if (annotations.isEmpty() && labels.isEmpty()) {
      throw new InputException(metadataNode.position(), field + ".metadata: changes no annotation or label (write annotations: {KEY: VALUE} or labels:, a null VALUE removes the key)");
    }
    return new ScenarioEvent.Patch(at, ref, as, annotations, labels);
  }

  /** The values of a merge patch's string map: a value sets the key, null removes it. */
  private static Map<String, Optional<String>> patchValues(Optional<YamlNode> node, String field) {
    Map<String, Optional<String>> out = new LinkedHashMap<>();
    if (node.isEmpty() || isNull(node.get())) {
      return out;
    }
    for (YamlMap.Entry e : node.get().asMap(field).entries().values()) {
      YamlScalar value = e.value().asScalar(YamlMap.path(field, e.key()));
      out.put(e.key(), value.kind() == YamlScalar.Kind.NULL ? Optional.empty() : Optional.of(value.text()));
    }
    return out;
  }

  private static PodRef podRef(String text, YamlNode node, String field) {
    try {
      return PodRefs.parse(text);
    } catch (IllegalArgumentException e) {
      throw new InputException(node.position(), field + ": " + e.getMessage());
    }
  }

  private static String summary(YamlMap changes) {
    List<String> parts = new ArrayList<>();
    for (YamlMap.Entry e : changes.entries().values()) {
      parts.add(e.key() + "=" + (e.value() instanceof YamlScalar s ? s.text() : "(" + e.value().describe() + ")"));
    }
    return String.join(" ", parts);
  }

  /** A Pod, a KAI Queue or a KAI PodGroup, by its {@code kind}. */
  private static ScenarioEvent createAny(YamlNode manifest, String field, Position at) {
    YamlMap map = manifest.asMap(field);
    String kind = KaiObjectParser.kind(map, field);
    return switch (kind) {
      case KaiObjectParser.QUEUE_KIND -> KaiObjectParser.queue(map, field, at);
      case KaiObjectParser.POD_GROUP_KIND -> KaiObjectParser.podGroup(map, field, at);
      default -> create(manifest, field, at);
    };
  }

  private static ScenarioEvent.Create create(YamlNode manifest, String field, Position at) {
    YamlMap map = manifest.asMap(field);
    map.get("kind").ifPresent(k -> {
      String kind = k.asScalar(field + ".kind").asString(field + ".kind");
      if (!kind.equals("Pod")) {
        throw new InputException(k.position(), field + ".kind: expected Pod, Queue or PodGroup, got '" + kind + "'");
      }
    });
    checkQuantities(map, field);
    Pod pod;
    try {
      pod = PodJson.fromTree(JacksonTrees.toJson(map));
    } catch (JacksonException e) {
      String path = JacksonTrees.describePath(e);
      String message = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage().lines().findFirst().orElse("").trim();
      throw new InputException(
          JacksonTrees.locate(map, e), field + (path.isEmpty() ? "" : "." + path) + ": not a valid Pod field: " + message, e);
    }
    requireNonEmpty(map.require("metadata", field).asMap(field + ".metadata"), "name", field + ".metadata");
    return new ScenarioEvent.Create(at, pod, PodRefs.of(pod));
  }

  /** Every resource quantity of every container must parse, as the API server requires. */
  private static void checkQuantities(YamlMap pod, String field) {
    Optional<YamlNode> spec = pod.get("spec");
    if (spec.isEmpty() || !(spec.get() instanceof YamlMap specMap)) {
      return;
    }
    for (String list : List.of("initContainers", "containers")) {
      Optional<YamlNode> containers = specMap.get(list);
      if (containers.isEmpty() || !(containers.get() instanceof YamlList items)) {
        continue;
      }
      for (int i = 0; i < items.items().size(); i++) {
        if (!(items.items().get(i) instanceof YamlMap container)
            || !(container.get("resources").orElse(null) instanceof YamlMap resources)) {
          continue;
        }
        for (String kind : List.of("limits", "requests")) {
          if (!(resources.get(kind).orElse(null) instanceof YamlMap amounts)) {
            continue;
          }
          for (YamlMap.Entry e : amounts.entries().values()) {
            String f = field + ".spec." + list + "[" + i + "].resources." + kind + "." + e.key();
            quantity(e.value().asScalar(f).asString(f).trim(), e.value(), f);
          }
        }
      }
    }
  }
}
