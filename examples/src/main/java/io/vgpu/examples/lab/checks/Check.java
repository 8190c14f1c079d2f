package io.vgpu.examples.lab.checks;

import io.vgpu.k8s.yaml.InputException;
import io.vgpu.k8s.yaml.JacksonTrees;
import io.vgpu.k8s.yaml.Position;
import io.vgpu.k8s.yaml.YamlList;
import io.vgpu.k8s.yaml.YamlMap;
import io.vgpu.k8s.yaml.YamlNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import tools.jackson.databind.JsonNode;

/**
 * One expectation of a lab scenario, evaluated against its report: a {@link ReportPath} and exactly one
 * operator. Written under a scenario's {@code checks:}:
 *
 * <pre>
 * - name: the pod sees its 4096 MiB limit through NVML at physical index 1
 *   path: pods[hami-tests/gpu1].containers[gpu].observed[op=nvml][0].devices[0]
 *   equals: {index: 1, totalMiB: 4096}
 * </pre>
 *
 * Operators: {@code equals} and {@code notEquals} (objects match when every field given is equal),
 * {@code sameAs} and {@code differentFrom} (another path), {@code atLeast}, {@code atMost} and
 * {@code between: [low, high]} (numbers; an array counts its elements), {@code count} (an array's size),
 * {@code contains} and {@code notContains} (an array element that matches, or a substring),
 * {@code matches} (a regular expression over the whole text), {@code exists} (true or false).
 *
 * @param name what is checked, as the matrix shows it
 * @param path where the observed value is
 * @param operator the operator
 * @param operand its argument
 * @param position where the check is written
 */
public record Check(String name, ReportPath path, String operator, JsonNode operand, Position position) {
  private static final List<String> OPERATORS =
      List.of("equals", "notEquals", "sameAs", "differentFrom", "atLeast", "atMost", "between", "count", "contains", "notContains", "matches", "exists");
  private static final List<String> KEYS;

  static {
    List<String> keys = new ArrayList<>(List.of("name", "path"));
    keys.addAll(OPERATORS);
    KEYS = List.copyOf(keys);
  }

  /**
   * The outcome of a check.
   *
   * @param check the check
   * @param expected the expectation in words
   * @param observed what the report holds there
   * @param passed whether it holds
   */
  public record Result(Check check, String expected, String observed, boolean passed) {}

  /**
   * Reads a scenario's {@code checks} section.
   *
   * @throws InputException naming the field, the value and its position
   */
  public static List<Check> parse(YamlList checks) {
    List<Check> out = new ArrayList<>();
    for (int i = 0; i < checks.items().size(); i++) {
      String field = "checks[" + i + "]";
      YamlMap map = checks.items().get(i).asMap(field);
      map.requireKnownKeys(field, KEYS);
      String name = map.require("name", field).asScalar(field + ".name").asString(field + ".name");
      YamlNode pathNode = map.require("path", field);
      ReportPath path;
      try {
        path = ReportPath.parse(pathNode.asScalar(field + ".path").asString(field + ".path"));
      } catch (IllegalArgumentException e) {
        throw new InputException(pathNode.position(), field + ".path: " + e.getMessage());
      }
      List<Map.Entry<String, YamlMap.Entry>> ops = new ArrayList<>();
      map.entries().forEach((k, v) -> {
        if (OPERATORS.contains(k)) {
          ops.add(Map.entry(k, v));
        }
      });
      if (ops.size() != 1) {
        throw new InputException(map.position(), field + ": a check has exactly one of " + String.join(", ", OPERATORS));
      }
      String operator = ops.get(0).getKey();
      YamlMap.Entry entry = ops.get(0).getValue();
      JsonNode operand = JacksonTrees.toJson(entry.value());
      validate(operator, operand, entry.value().position(), field + "." + operator);
      out.add(new Check(name, path, operator, operand, map.position()));
    }
    return out;
  }

  private static void validate(String operator, JsonNode operand, Position at, String field) {
    boolean ok =
        switch (operator) {
          case "atLeast", "atMost" -> operand.isNumber();
          case "count" -> operand.isIntegralNumber() && operand.asLong() >= 0;
          case "between" -> operand.isArray() && operand.size() == 2 && operand.get(0).isNumber() && operand.get(1).isNumber();
          case "sameAs", "differentFrom" -> operand.isString() && parses(operand.asString());
          case "matches" -> operand.isString() && compiles(operand.asString());
          case "exists" -> operand.isBoolean();
          default -> true;
        };
    if (!ok) {
      throw new InputException(at, field + ": '" + operand + "' is not a valid operand (" + usage(operator) + ")");
    }
  }

  private static String usage(String operator) {
    return switch (operator) {
      case "atLeast", "atMost" -> "a number";
      case "count" -> "a non-negative integer";
      case "between" -> "[low, high]";
      case "sameAs", "differentFrom" -> "a report path";
      case "matches" -> "a regular expression";
      case "exists" -> "true or false";
      default -> "a value";
    };
  }

  private static boolean parses(String path) {
    try {
      ReportPath.parse(path);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static boolean compiles(String regex) {
    try {
      Pattern.compile(regex);
      return true;
    } catch (PatternSyntaxException e) {
      return false;
    }
  }

  /** Evaluates the check against a report. */
  public Result evaluate(JsonNode report) {
    ReportPath.Resolved observed = path.resolve(report);
    String expected = expected();
    if (operator.equals("exists")) {
      boolean want = operand.asBoolean();
      return new Result(this, expected, observed.found() ? "present" : "absent", observed.found() == want);
    }
    if (!observed.found()) {
      return new Result(this, expected, "(" + observed.missing() + ")", false);
    }
    JsonNode value = observed.value();
    String shown = show(value);
    boolean passed =
        switch (operator) {
          case "equals" -> matches(value, operand);
          case "notEquals" -> !matches(value, operand);
          case "sameAs", "differentFrom" -> {
            ReportPath.Resolved other = ReportPath.parse(operand.asString()).resolve(report);
            boolean same = other.found() && matches(value, other.value()) && matches(other.value(), value);
            shown = shown + " vs " + (other.found() ? show(other.value()) : "(" + other.missing() + ")");
            yield operator.equals("sameAs") == same && other.found();
          }
          case "atLeast" -> number(value) >= operand.asDouble();
          case "atMost" -> number(value) <= operand.asDouble();
          case "between" -> number(value) >= operand.get(0).asDouble() && number(value) <= operand.get(1).asDouble();
          case "count" -> value.isArray() && value.size() == operand.asInt();
          case "contains" -> contains(value, operand);
          case "notContains" -> !contains(value, operand);
          case "matches" -> value.isValueNode() && Pattern.compile(operand.asString()).matcher(ReportPath.scalar(value)).matches();
          default -> throw new IllegalStateException("operator " + operator);
        };
    if ((operator.equals("count") || operator.startsWith("at") || operator.equals("between")) && value.isArray()) {
      shown = value.size() + " item(s)";
    }
    return new Result(this, expected, shown, passed);
  }

  /** The expectation in words, for the matrix. */
  public String expected() {
    return switch (operator) {
      case "equals" -> "= " + show(operand);
      case "notEquals" -> "≠ " + show(operand);
      case "sameAs" -> "same as " + operand.asString();
      case "differentFrom" -> "different from " + operand.asString();
      case "atLeast" -> "≥ " + ReportPath.scalar(operand);
      case "atMost" -> "≤ " + ReportPath.scalar(operand);
      case "between" -> ReportPath.scalar(operand.get(0)) + " … " + ReportPath.scalar(operand.get(1));
      case "count" -> operand.asInt() + " item(s)";
      case "contains" -> "contains " + show(operand);
      case "notContains" -> "does not contain " + show(operand);
      case "matches" -> "matches /" + operand.asString() + "/";
      case "exists" -> operand.asBoolean() ? "present" : "absent";
      default -> operator;
    };
  }

  /** Whether {@code value} matches {@code expected}: objects by the fields given, numbers numerically. */
  static boolean matches(JsonNode value, JsonNode expected) {
    if (expected.isObject()) {
      if (!value.isObject()) {
        return false;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = expected.properties().iterator(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!value.has(e.getKey()) || !matches(value.get(e.getKey()), e.getValue())) {
          return false;
        }
      }
      return true;
    }
    if (expected.isArray()) {
      if (!value.isArray() || value.size() != expected.size()) {
        return false;
      }
      for (int i = 0; i < expected.size(); i++) {
        if (!matches(value.get(i), expected.get(i))) {
          return false;
        }
      }
      return true;
    }
    if (expected.isNumber() && value.isNumber()) {
      return expected.asDouble() == value.asDouble();
    }
    if (expected.isNull() || value.isNull()) {
      return expected.isNull() && value.isNull();
    }
    return value.isValueNode() && ReportPath.scalar(value).equals(ReportPath.scalar(expected));
  }

  private static boolean contains(JsonNode value, JsonNode wanted) {
    if (value.isArray()) {
      for (JsonNode element : value) {
        if (matches(element, wanted)) {
          return true;
        }
      }
      return false;
    }
    return value.isValueNode() && ReportPath.scalar(value).contains(ReportPath.scalar(wanted));
  }

  private static double number(JsonNode value) {
    if (value.isArray()) {
      return value.size();
    }
    if (value.isNumber()) {
      return value.asDouble();
    }
    try {
      return Double.parseDouble(value.asString(""));
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  private static String show(JsonNode value) {
    String text = value.isValueNode() ? ReportPath.scalar(value) : value.toString();
    return text.length() > 160 ? text.substring(0, 157) + "..." : text;
  }
}
