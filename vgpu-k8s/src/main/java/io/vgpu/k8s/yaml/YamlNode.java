package io.vgpu.k8s.yaml;

/**
 * A value read from a YAML or JSON document together with its {@link Position}: a mapping, a list or a
 * scalar.
 */
public sealed interface YamlNode permits YamlMap, YamlList, YamlScalar {

  /** Where the value starts. */
  Position position();

  /** A short description for error messages: the scalar's text, or {@code a mapping} / {@code a list}. */
  String describe();

  /**
   * This node as a mapping.
   *
   * @param field the field's path for the error message, e.g. {@code nodes[0].gpus}
   * @throws InputException when it is not a mapping
   */
  default YamlMap asMap(String field) {
    if (this instanceof YamlMap map) {
      return map;
    }
    throw new InputException(position(), field + ": expected a mapping, got " + describe());
  }

  /**
   * This node as a list.
   *
   * @param field the field's path for the error message
   * @throws InputException when it is not a list
   */
  default YamlList asList(String field) {
    if (this instanceof YamlList list) {
      return list;
    }
    throw new InputException(position(), field + ": expected a list, got " + describe());
  }

  /**
   * This node as a scalar.
   *
   * @param field the field's path for the error message
   * @throws InputException when it is a mapping or a list
   */
  default YamlScalar asScalar(String field) {
    if (this instanceof YamlScalar scalar) {
      return scalar;
    }
    throw new InputException(position(), field + ": expected a single value, got " + describe());
  }
}
