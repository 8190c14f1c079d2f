package io.vgpu.api;

import java.util.Objects;

/**
 * Identifies a pod by namespace and name, the way Kubernetes users name it.
 *
 * @param namespace the pod's namespace, never empty
 * @param name the pod's name, never empty
 */
public record PodRef(String namespace, String name) implements Comparable<PodRef> {

  /** Validates that both parts are present. */
  public PodRef {
    Objects.requireNonNull(namespace, "namespace");
    Objects.requireNonNull(name, "name");
    if (namespace.isEmpty()) {
      throw new IllegalArgumentException("pod namespace is empty");
    }
    if (name.isEmpty()) {
      throw new IllegalArgumentException("pod name is empty");
    }
  }

  /**
   * Parses {@code "namespace/name"}, or a bare {@code "name"} in {@code defaultNamespace}.
   *
   * @param text the reference as users write it
   * @param defaultNamespace the namespace used when {@code text} has none
   * @return the parsed reference
   */
  public static PodRef parse(String text, String defaultNamespace) {
    int slash = text.indexOf('/');
    if (slash < 0) {
      return new PodRef(defaultNamespace, text);
    }
    return new PodRef(text.substring(0, slash), text.substring(slash + 1));
  }

  @Override
  public int compareTo(PodRef other) {
    int byNamespace = namespace.compareTo(other.namespace);
    return byNamespace != 0 ? byNamespace : name.compareTo(other.name);
  }

  /** Returns {@code namespace/name}. */
  @Override
  public String toString() {
    return namespace + "/" + name;
  }
}
