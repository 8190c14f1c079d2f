package io.vgpu.k8s.simulate;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.vgpu.api.PodRef;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import io.vgpu.k8s.kai.KaiKeys;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.JacksonTrees;
import io.vgpu.k8s.yaml.Position;
import io.vgpu.k8s.yaml.YamlMap;
import io.vgpu.k8s.yaml.YamlNode;
import io.vgpu.k8s.yaml.YamlScalar;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Reads the KAI objects a scenario may create besides pods: Queues ({@code scheduling.run.ai/v2},
 * cluster-scoped) and PodGroups ({@code scheduling.run.ai/v2alpha2}). Every field read is checked and
 * named in its error; other fields of the manifest are kept as written for programs that create the
 * object.
 */
final class KaiObjectParser {
  static final String QUEUE_KIND = "Queue";
  static final String POD_GROUP_KIND = "PodGroup";

  private static final List<String> QUEUE_SPEC_KEYS = List.of("displayName", "parentQueue", "priority", "resources", "preemptMinRuntime", "reclaimMinRuntime");
  private static final List<String> TERMS_KEYS = List.of("quota", "limit", "overQuotaWeight");
  /** An object name as the API server accepts one (a DNS subdomain). */
  private static final Pattern NAME = Pattern.compile("[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?");

  private KaiObjectParser() {}

  /** The manifest's kind, or {@code Pod} when it names none. */
  static String kind(YamlMap manifest, String field) {
    return manifest.get("kind").map(k -> k.asScalar(field + ".kind").asString(field + ".kind")).orElse("Pod");
  }

  /** A Queue manifest. */
  static ScenarioEvent.CreateQueue queue(YamlMap manifest, String field, Position at) {
    requireApiVersion(manifest, field, KaiKeys.QUEUE_API_VERSION);
    YamlMap metadata = manifest.require("metadata", field).asMap(field + ".metadata");
    String name = name(metadata, field + ".metadata");
    metadata.get("namespace").ifPresent(n -> {
      throw new InputException(n.position(), field + ".metadata.namespace: a Queue is cluster-scoped and has no namespace");
    });
    Optional<YamlMap> spec = manifest.get("spec").filter(s -> !isNull(s)).map(s -> s.asMap(field + ".spec"));
    Optional<String> parent = Optional.empty();
    int priority = QueueSpec.DEFAULT_PRIORITY;
    Map<QueueResource, ResourceTerms> resources = new EnumMap<>(QueueResource.class);
    if (spec.isPresent()) {
      String f = field + ".spec";
      spec.get().requireKnownKeys(f, QUEUE_SPEC_KEYS);
      Optional<YamlNode> parentNode = spec.get().get("parentQueue").filter(p -> !isNull(p));
      if (parentNode.isPresent()) {
        String text = parentNode.get().asScalar(f + ".parentQueue").asString(f + ".parentQueue").trim();
        if (text.equals(name)) {
          throw new InputException(parentNode.get().position(), f + ".parentQueue: queue '" + name + "' cannot be its own parent");
        }
        parent = text.isEmpty() ? Optional.empty() : Optional.of(text);
      }
      Optional<YamlNode> priorityNode = spec.get().get("priority").filter(p -> !isNull(p));
      if (priorityNode.isPresent()) {
        priority = priorityNode.get().asScalar(f + ".priority").asInt(f + ".priority", Integer.MIN_VALUE, Integer.MAX_VALUE);
      }
      Optional<YamlNode> resourcesNode = spec.get().get("resources").filter(r -> !isNull(r));
      if (resourcesNode.isPresent()) {
        YamlMap map = resourcesNode.get().asMap(f + ".resources");
        map.requireKnownKeys(f + ".resources", List.of(QueueResource.GPU.key(), QueueResource.CPU.key(), QueueResource.MEMORY.key()));
        for (QueueResource r : QueueResource.values()) {
          Optional<YamlNode> terms = map.get(r.key()).filter(t -> !isNull(t));
          if (terms.isPresent()) {
            resources.put(r, terms(terms.get().asMap(f + ".resources." + r.key()), f + ".resources." + r.key()));
          }
        }
      }
    }
    return new ScenarioEvent.CreateQueue(at, new QueueSpec(name, parent, priority, resources), resource(manifest));
  }

  /** A PodGroup manifest; its namespace defaults to {@code default}. */
  static ScenarioEvent.CreatePodGroup podGroup(YamlMap manifest, String field, Position at) {
    requireApiVersion(manifest, field, KaiKeys.POD_GROUP_API_VERSION);
    YamlMap metadata = manifest.require("metadata", field).asMap(field + ".metadata");
    String name = name(metadata, field + ".metadata");
    String namespace = metadata.get("namespace").filter(n -> !isNull(n)).map(n -> n.asScalar(field + ".metadata.namespace").asString(field + ".metadata.namespace").trim()).orElse("default");
    int minMember = 1;
    Optional<String> queue = Optional.empty();
    Optional<YamlMap> spec = manifest.get("spec").filter(s -> !isNull(s)).map(s -> s.asMap(field + ".spec"));
    if (spec.isPresent()) {
      Optional<YamlNode> min = spec.get().get("minMember").filter(m -> !isNull(m));
      if (min.isPresent()) {
        minMember = min.get().asScalar(field + ".spec.minMember").asInt(field + ".spec.minMember", 1, Integer.MAX_VALUE);
      }
      Optional<YamlNode> queueNode = spec.get().get("queue").filter(q -> !isNull(q));
      if (queueNode.isPresent()) {
        String text = queueNode.get().asScalar(field + ".spec.queue").asString(field + ".spec.queue").trim();
        queue = text.isEmpty() ? Optional.empty() : Optional.of(text);
      }
    }
    return new ScenarioEvent.CreatePodGroup(at, new PodRef(namespace, name), minMember, queue, resource(manifest));
  }

  /** {@code delete: queue/NAME} or {@code podgroup/[NAMESPACE/]NAME}; empty for anything else (a pod). */
  static Optional<ScenarioEvent.DeleteObject> delete(String target, YamlNode node, String field, Position at) {
    String[] parts = target.split("/", -1);
    if (parts[0].equals("queue")) {
      if (parts.length != 2 || !NAME.matcher(parts[1]).matches()) {
        throw new InputException(node.position(), field + ": '" + target + "' is not queue/NAME");
      }
      return Optional.of(new ScenarioEvent.DeleteObject(at, QUEUE_KIND, "", parts[1]));
    }
    if (parts[0].equals("podgroup")) {
      boolean valid = (parts.length == 2 || parts.length == 3) && java.util.Arrays.stream(parts, 1, parts.length).allMatch(p -> NAME.matcher(p).matches());
      if (!valid) {
        throw new InputException(node.position(), field + ": '" + target + "' is not podgroup/NAMESPACE/NAME or podgroup/NAME");
      }
      return Optional.of(new ScenarioEvent.DeleteObject(at, POD_GROUP_KIND, parts.length == 3 ? parts[1] : "default", parts[parts.length - 1]));
    }
    return Optional.empty();
  }

  private static ResourceTerms terms(YamlMap map, String field) {
    map.requireKnownKeys(field, TERMS_KEYS);
    double quota = number(map, "quota", field);
    double limit = number(map, "limit", field);
    double weight = number(map, "overQuotaWeight", field);
    if (weight < 0) {
      YamlNode written = map.require("overQuotaWeight", field);
      throw new InputException(written.position(), field + ".overQuotaWeight: " + written.asScalar(field).text() + " must not be negative");
    }
    return new ResourceTerms(quota, limit, weight);
  }

  /** A field of a queue's terms: absent is 0, as KAI has it; otherwise -1 or a finite number not below 0. */
  private static double number(YamlMap map, String key, String field) {
    Optional<YamlNode> node = map.get(key).filter(n -> !isNull(n));
    if (node.isEmpty()) {
      return 0;
    }
    String f = field + "." + key;
    double value = node.get().asScalar(f).asDouble(f);
    if (!Double.isFinite(value) || (value < 0 && value != -1)) {
      throw new InputException(node.get().position(), f + ": " + node.get().asScalar(f).text() + " must be -1 or a number not below 0");
    }
    return value;
  }

  private static String name(YamlMap metadata, String field) {
    YamlNode node = metadata.require("name", field);
    String name = node.asScalar(field + ".name").asString(field + ".name").trim();
    if (!NAME.matcher(name).matches()) {
      throw new InputException(node.position(), field + ".name: '" + name + "' is not a valid object name");
    }
    return name;
  }

  private static void requireApiVersion(YamlMap manifest, String field, String expected) {
    manifest.get("apiVersion").ifPresent(v -> {
      String text = v.asScalar(field + ".apiVersion").asString(field + ".apiVersion");
      if (!text.equals(expected)) {
        throw new InputException(v.position(), field + ".apiVersion: expected " + expected + ", got '" + text + "'");
      }
    });
  }

  private static GenericKubernetesResource resource(YamlMap manifest) {
    return PodJson.mapper().convertValue(JacksonTrees.toJson(manifest), GenericKubernetesResource.class);
  }

  private static boolean isNull(YamlNode node) {
    return node instanceof YamlScalar s && s.kind() == YamlScalar.Kind.NULL;
  }
}
