package io.vgpu.k8s.yaml;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * Bridges {@link YamlNode} trees and Jackson: converts a tree to a {@link JsonNode} for data binding,
 * and finds the position of the value a Jackson error points at.
 */
public final class JacksonTrees {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private JacksonTrees() {}

  /** The tree as a Jackson node, numbers kept exact. */
  public static JsonNode toJson(YamlNode node) {
    if (node instanceof YamlMap map) {
      ObjectNode out = NODES.objectNode();
      map.entries().values().forEach(e -> out.set(e.key(), toJson(e.value())));
      return out;
    }
    if (node instanceof YamlList list) {
      ArrayNode out = NODES.arrayNode();
      list.items().forEach(item -> out.add(toJson(item)));
      return out;
    }
    return scalar((YamlScalar) node);
  }

  private static JsonNode scalar(YamlScalar scalar) {
    return switch (scalar.kind()) {
      case STRING -> NODES.stringNode(scalar.text());
      case BOOLEAN -> NODES.booleanNode(Boolean.parseBoolean(scalar.text().trim()));
      case NULL -> NODES.nullNode();
      case INTEGER -> {
        try {
          yield NODES.numberNode(new BigInteger(scalar.text().trim()));
        } catch (NumberFormatException e) {
          yield NODES.stringNode(scalar.text());
        }
      }
      case DECIMAL -> {
        try {
          yield NODES.numberNode(new BigDecimal(scalar.text().trim()));
        } catch (NumberFormatException e) {
          yield NODES.stringNode(scalar.text());
        }
      }
    };
  }

  /**
   * The position of the value a Jackson binding error points at, as deep as the tree allows.
   *
   * @param root the tree that was bound
   * @param error the error, whose reference path leads from the root to the bad value
   */
  public static Position locate(YamlNode root, JacksonException error) {
    YamlNode current = root;
    List<JacksonException.Reference> path = error.getPath();
    for (JacksonException.Reference ref : path) {
      Optional<YamlNode> next = step(current, ref);
      if (next.isEmpty()) {
        break;
      }
      current = next.get();
    }
    return current.position();
  }

  /** The path of a Jackson error as users write it, e.g. {@code spec.containers[0].name}. */
  public static String describePath(JacksonException error) {
    StringBuilder out = new StringBuilder();
    for (JacksonException.Reference ref : error.getPath()) {
      if (ref.getPropertyName() != null) {
        if (out.length() > 0) {
          out.append('.');
        }
        out.append(ref.getPropertyName());
      } else if (ref.getIndex() >= 0) {
        out.append('[').append(ref.getIndex()).append(']');
      }
    }
    return out.toString();
  }

  private static Optional<YamlNode> step(YamlNode node, JacksonException.Reference ref) {
    if (node instanceof YamlMap map && ref.getPropertyName() != null) {
      return map.get(ref.getPropertyName());
    }
    if (node instanceof YamlList list && ref.getIndex() >= 0 && ref.getIndex() < list.items().size()) {
      return Optional.of(list.items().get(ref.getIndex()));
    }
    return Optional.empty();
  }
}
