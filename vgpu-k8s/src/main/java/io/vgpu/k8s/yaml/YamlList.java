package io.vgpu.k8s.yaml;

import java.util.List;
import java.util.Objects;

/**
 * A YAML sequence or JSON array.
 *
 * @param position where the list starts
 * @param items the items, in document order
 */
public record YamlList(Position position, List<YamlNode> items) implements YamlNode {

  /** Copies the items. */
  public YamlList {
    Objects.requireNonNull(position, "position");
    items = List.copyOf(items);
  }

  @Override
  public String describe() {
    return "a list";
  }
}
