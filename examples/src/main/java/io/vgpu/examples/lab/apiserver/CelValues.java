package io.vgpu.examples.lab.apiserver;

import dev.cel.common.values.NullValue;
import dev.cel.runtime.CelEvaluationException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * JSON as CEL sees an unstructured Kubernetes object: objects are maps, arrays lists, whole numbers
 * {@code int} (Java {@code Long}), other numbers {@code double}, {@code null} CEL's null. A field whose
 * value is {@code null} is left out, as kube-apiserver decodes it: {@code has(object.metadata.namespace)}
 * is false for a Node whatever JSON the write carried.
 */
final class CelValues {
  private static final String ERROR_PREFIX = "evaluation error at ";
  private static final Pattern MISSING_FIELD = Pattern.compile("key '(.*)' is not present in map\\.");

  private CelValues() {}

  /** The CEL value of a JSON value; CEL's null for a missing or null one. */
  static Object of(@Nullable JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return NullValue.NULL_VALUE;
    }
    if (node.isObject()) {
      Map<String, Object> out = new LinkedHashMap<>();
      node.properties().forEach(e -> {
        if (!e.getValue().isNull()) {
          out.put(e.getKey(), of(e.getValue()));
        }
      });
      return out;
    }
    if (node.isArray()) {
      List<Object> out = new ArrayList<>(node.size());
      node.forEach(v -> out.add(of(v)));
      return out;
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    if (node.isIntegralNumber()) {
      return node.longValue();
    }
    if (node.isNumber()) {
      return node.doubleValue();
    }
    return node.asString();
  }

  /**
   * An evaluation error in cel-go's words where they differ ({@code no such key: K}), without
   * cel-java's position prefix: the message kube-apiserver puts after "resulted in error:".
   */
  static String errorMessage(CelEvaluationException e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    if (message.startsWith(ERROR_PREFIX)) {
      int colon = message.indexOf(": ", ERROR_PREFIX.length());
      message = colon < 0 ? message : message.substring(colon + 2);
    }
    if (e.getCause() instanceof IndexOutOfBoundsException) {
      return "no such key: " + message; // an index of a missing key
    }
    Matcher missing = MISSING_FIELD.matcher(message);
    return missing.matches() ? "no such key: " + missing.group(1) : message;
  }
}
