package io.vgpu.k8s.yaml;

import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A YAML mapping or JSON object, keys in document order, each key with its own position.
 *
 * @param position where the mapping starts
 * @param entries the entries by key, in document order
 */
public record YamlMap(Position position, Map<String, Entry> entries) implements YamlNode {

  /**
   * One key and its value.
   *
   * @param key the key
   * @param keyPosition where the key is written
   * @param value the value
   */
  public record Entry(String key, Position keyPosition, YamlNode value) {}

  /** Copies the entries, keeping their order. */
  public YamlMap {
    Objects.requireNonNull(position, "position");
    entries = Collections.unmodifiableMap(new LinkedHashMap<>(entries));
  }

  @Override
  public String describe() {
    return "a mapping";
  }

  /** The value of {@code key}, if present. */
  public Optional<YamlNode> get(String key) {
    Entry e = entries.get(key);
    return e == null ? Optional.empty() : Optional.of(e.value());
  }

  /**
   * The value of {@code key}.
   *
   * @param field the mapping's path for the error message
   * @throws InputException when the key is missing
   */
  public YamlNode require(String key, String field) {
    return get(key)
        .orElseThrow(() -> new InputException(position, field + ": missing required key '" + key + "'"));
  }

  /**
   * Fails on the first key that is not one of {@code allowed}.
   *
   * @param field the mapping's path for the error message
   * @throws InputException naming the unknown key, where it is, and the keys allowed
   */
  public void requireKnownKeys(String field, Collection<String> allowed) {
    for (Entry e : entries.values()) {
      if (!allowed.contains(e.key())) {
        throw new InputException(
            e.keyPosition(),
            "unknown key '" + e.key() + "' in " + field + " (known keys: " + String.join(", ", allowed) + ")");
      }
    }
  }

  /** A child path for error messages: {@code field.key}, or just {@code key} at the top. */
  public static String path(String field, String key) {
    return field.isEmpty() ? key : field + "." + key;
  }
}
