package io.vgpu.core.queue;

import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One queue as written ({@code scheduling.run.ai/v2 Queue}). Only leaf queues take pods.
 *
 * @param name the queue's name (Queues are cluster-scoped)
 * @param parent the parent queue, if any ({@code spec.parentQueue}; an empty string is none)
 * @param priority {@code spec.priority}; {@link #DEFAULT_PRIORITY} when absent
 * @param resources the terms per resource; a resource not in the map has {@link ResourceTerms#NONE}
 */
public record QueueSpec(String name, Optional<String> parent, int priority, Map<QueueResource, ResourceTerms> resources) {
  /** KAI's priority of a queue that names none. */
  public static final int DEFAULT_PRIORITY = 100;

  /** Validates the name and copies the map, filling absent resources with {@link ResourceTerms#NONE}. */
  public QueueSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(parent, "parent");
    if (name.isEmpty()) {
      throw new IllegalArgumentException("a queue needs a name");
    }
    if (parent.isPresent() && (parent.get().isEmpty() || parent.get().equals(name))) {
      throw new IllegalArgumentException("queue " + name + " cannot have parent '" + parent.get() + "'");
    }
    EnumMap<QueueResource, ResourceTerms> all = new EnumMap<>(QueueResource.class);
    for (QueueResource r : QueueResource.values()) {
      all.put(r, resources.getOrDefault(r, ResourceTerms.NONE));
    }
    resources = Map.copyOf(all);
  }

  /** The terms of one resource. */
  public ResourceTerms terms(QueueResource resource) {
    return resources.get(resource);
  }
}
