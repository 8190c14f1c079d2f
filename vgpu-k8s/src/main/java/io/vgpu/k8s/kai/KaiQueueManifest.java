package io.vgpu.k8s.kai;

import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.JsonNode;

/**
 * A KAI Queue ({@code scheduling.run.ai/v2}) as a cluster holds it, read into the engine's {@link
 * QueueSpec} the way KAI v0.17 reads it: every field absent is 0 ({@code quota}, {@code limit}, {@code
 * overQuotaWeight}; KAI has no defaulting), {@code priority} absent is {@value QueueSpec#DEFAULT_PRIORITY},
 * {@code -1} is "everything" for a quota and "no limit" for a limit, and an empty {@code parentQueue} is
 * none.
 *
 * <p>A Queue is whatever its author wrote: a value KAI cannot mean is not a reason to drop the queue (its
 * pods would then wait as if it did not exist) nor to fail. Each such value is read as 0 and reported in
 * one line naming the queue, the field and the value: a negative or non-numeric quota deserves nothing,
 * such a limit admits nothing (a limit fails closed), such a weight takes no part in the over-quota
 * division (KAI clamps a negative weight to 0 too), a priority that is not an integer is the default.
 * Only a queue that names itself as its parent cannot be read at all.
 *
 * @param name the queue's name
 * @param spec the queue as the engine takes it, empty when it cannot be read at all
 * @param problems one line per value read other than as written, in field order
 */
public record KaiQueueManifest(String name, Optional<QueueSpec> spec, List<String> problems) {
  /** Copies the list. */
  public KaiQueueManifest {
    problems = List.copyOf(problems);
  }

  /**
   * Reads a Queue object (as JSON).
   *
   * @return the queue, or empty when the object has no name (it is no Queue a cluster can hold)
   */
  public static Optional<KaiQueueManifest> read(JsonNode queue) {
    String name = queue.path("metadata").path("name").asString("");
    if (name.isEmpty()) {
      return Optional.empty();
    }
    List<String> problems = new ArrayList<>();
    JsonNode spec = queue.path("spec");
    String where = "Queue " + name + ": spec.";
    Optional<String> parent = Optional.empty();
    JsonNode parentNode = spec.path("parentQueue");
    if (parentNode.isString() && !parentNode.asString().isEmpty()) {
      if (parentNode.asString().equals(name)) {
        problems.add(where + "parentQueue '" + name + "' is the queue itself: its pods wait (QueueMissing) until it names another parent or none");
        return Optional.of(new KaiQueueManifest(name, Optional.empty(), problems));
      }
      parent = Optional.of(parentNode.asString());
    } else if (!parentNode.isMissingNode() && !parentNode.isNull() && !parentNode.isString()) {
      problems.add(where + "parentQueue " + parentNode + " is not a queue name: its pods wait (QueueMissing) until it is one");
      return Optional.of(new KaiQueueManifest(name, Optional.empty(), problems));
    }
    int priority = QueueSpec.DEFAULT_PRIORITY;
    JsonNode priorityNode = spec.path("priority");
    if (!priorityNode.isMissingNode() && !priorityNode.isNull()) {
      if (priorityNode.isIntegralNumber() && priorityNode.canConvertToInt()) {
        priority = priorityNode.asInt();
      } else {
        problems.add(where + "priority " + priorityNode + " is not an integer: taken as " + QueueSpec.DEFAULT_PRIORITY);
      }
    }
    Map<QueueResource, ResourceTerms> resources = new EnumMap<>(QueueResource.class);
    for (QueueResource r : QueueResource.values()) {
      JsonNode terms = spec.path("resources").path(r.key());
      if (terms.isMissingNode() || terms.isNull()) {
        continue;
      }
      String field = where + "resources." + r.key() + ".";
      double quota = amount(terms.path("quota"), field + "quota", true, "it deserves nothing", problems);
      double limit = amount(terms.path("limit"), field + "limit", true, "it admits nothing", problems);
      double weight = amount(terms.path("overQuotaWeight"), field + "overQuotaWeight", false, "it takes no part in the over-quota division", problems);
      resources.put(r, new ResourceTerms(quota, limit, weight));
    }
    return Optional.of(new KaiQueueManifest(name, Optional.of(new QueueSpec(name, parent, priority, resources)), problems));
  }

  /**
   * One amount: absent is 0; otherwise a finite number not below 0, or -1 where {@code minusOne} says it
   * means all or unlimited; anything else is 0, reported.
   */
  private static double amount(JsonNode node, String field, boolean minusOne, String zeroMeans, List<String> problems) {
    if (node.isMissingNode() || node.isNull()) {
      return 0;
    }
    if (!node.isNumber() || !Double.isFinite(node.asDouble())) {
      problems.add(field + " " + node + " is not a number: taken as 0 (" + zeroMeans + ")");
      return 0;
    }
    double value = node.asDouble();
    if (value >= 0 || (minusOne && value == -1)) {
      return value;
    }
    problems.add(field + " " + node + (minusOne ? " must be -1 or not below 0" : " must not be negative") + ": taken as 0 (" + zeroMeans + ")");
    return 0;
  }
}
