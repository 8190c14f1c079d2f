package io.vgpu.examples.lab.checks;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;

/**
 * A path into a lab report, e.g. {@code pods[hami-tests/smoke].containers[gpu].observed[op=alloc][1].result}.
 *
 * <ul>
 *   <li>{@code name} or {@code [key]} on an object: that field ({@code [..]} takes any key); a metric
 *       sample may be named by some of its labels, {@code metrics.scheduler[hami_gpu_memory_allocated_bytes{device_uuid="GPU-…"}]},
 *       when exactly one sample of that name has them;
 *   <li>{@code [3]} on an array: the element at that index ({@code [-1]}: the last);
 *   <li>{@code [k=v,k2=v2]} on an array: the elements whose fields equal those values (an array);
 *   <li>{@code [text]} on an array: the one element named so — a pod by {@code namespace/name}, any
 *       other element by its {@code name}, {@code uuid} or {@code object} field.
 * </ul>
 */
public final class ReportPath {
  private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)\\{(.*)\\}");
  private final String text;
  private final List<String> segments;

  private ReportPath(String text, List<String> segments) {
    this.text = text;
    this.segments = segments;
  }

  /**
   * Parses a path.
   *
   * @throws IllegalArgumentException when brackets do not match or a segment is empty
   */
  public static ReportPath parse(String text) {
    List<String> segments = new ArrayList<>();
    int i = 0;
    while (i < text.length()) {
      char c = text.charAt(i);
      if (c == '.') {
        i++;
        continue;
      }
      if (c == '[') {
        int depth = 0;
        int j = i;
        for (; j < text.length(); j++) {
          char d = text.charAt(j);
          depth += d == '[' ? 1 : d == ']' ? -1 : 0;
          if (depth == 0) {
            break;
          }
        }
        if (j >= text.length()) {
          throw new IllegalArgumentException("unclosed '[' at character " + (i + 1));
        }
        segments.add(text.substring(i, j + 1));
        i = j + 1;
        continue;
      }
      int j = i;
      while (j < text.length() && text.charAt(j) != '.' && text.charAt(j) != '[') {
        j++;
      }
      segments.add(text.substring(i, j));
      i = j;
    }
    if (segments.isEmpty()) {
      throw new IllegalArgumentException("the path is empty");
    }
    return new ReportPath(text, List.copyOf(segments));
  }

  /** The path as written. */
  @Override
  public String toString() {
    return text;
  }

  /**
   * The value at this path.
   *
   * @return the value, or a description of where the path stopped matching
   */
  public Resolved resolve(JsonNode root) {
    JsonNode current = root;
    StringBuilder walked = new StringBuilder();
    for (String segment : segments) {
      Optional<JsonNode> next = step(current, segment);
      if (next.isEmpty()) {
        return new Resolved(null, (walked.length() == 0 ? "the report" : walked) + " has no " + segment);
      }
      current = next.get();
      if (!segment.startsWith("[") && walked.length() > 0) {
        walked.append('.');
      }
      walked.append(segment);
    }
    return new Resolved(current, "");
  }

  /**
   * A resolved value.
   *
   * @param value the value, or null when the path does not exist
   * @param missing why it does not exist
   */
  public record Resolved(JsonNode value, String missing) {
    /** Whether the path exists. */
    public boolean found() {
      return value != null;
    }
  }

  private static Optional<JsonNode> step(JsonNode node, String segment) {
    if (!segment.startsWith("[")) {
      return node.isObject() && node.has(segment) ? Optional.of(node.get(segment)) : Optional.empty();
    }
    String inner = segment.substring(1, segment.length() - 1);
    if (node.isObject()) {
      return node.has(inner) ? Optional.of(node.get(inner)) : sample(node, inner);
    }
    if (!node.isArray()) {
      return Optional.empty();
    }
    if (inner.matches("-?[0-9]+")) {
      int index = Integer.parseInt(inner);
      int at = index < 0 ? node.size() + index : index;
      return at >= 0 && at < node.size() ? Optional.of(node.get(at)) : Optional.empty();
    }
    if (inner.contains("=")) {
      ArrayNode matches = JsonNodeFactory.instance.arrayNode();
      for (JsonNode element : node) {
        if (matchesAll(element, inner)) {
          matches.add(element);
        }
      }
      return Optional.of(matches);
    }
    for (JsonNode element : node) {
      if (named(element, inner)) {
        return Optional.of(element);
      }
    }
    return Optional.empty();
  }

  /**
   * A metric sample named by some of its labels, {@code name{label="value",...}}: the one sample of
   * that name whose labels include those given (empty when none or several match).
   */
  private static Optional<JsonNode> sample(JsonNode samples, String selector) {
    Matcher m = SAMPLE.matcher(selector);
    if (!m.matches()) {
      return Optional.empty();
    }
    Map<String, String> wanted;
    try {
      wanted = labels(m.group(2));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    JsonNode found = null;
    for (Map.Entry<String, JsonNode> e : samples.properties()) {
      Matcher k = SAMPLE.matcher(e.getKey());
      String name = k.matches() ? k.group(1) : e.getKey();
      if (!name.equals(m.group(1))) {
        continue;
      }
      Map<String, String> has = k.matches() ? labels(k.group(2)) : Map.of();
      if (has.entrySet().containsAll(wanted.entrySet())) {
        if (found != null) {
          return Optional.empty(); // ambiguous: name more labels
        }
        found = e.getValue();
      }
    }
    return Optional.ofNullable(found);
  }

  /** Labels as LAB.md writes them: {@code k="v"} joined by commas, values escaped as in the text format. */
  private static Map<String, String> labels(String text) {
    Map<String, String> out = new HashMap<>();
    int i = 0;
    while (i < text.length()) {
      int eq = text.indexOf("=\"", i);
      if (eq < 0) {
        throw new IllegalArgumentException("not labels: " + text);
      }
      String key = text.substring(i, eq).trim();
      StringBuilder value = new StringBuilder();
      int j = eq + 2;
      for (; j < text.length() && text.charAt(j) != '"'; j++) {
        char c = text.charAt(j);
        if (c == '\\' && j + 1 < text.length()) {
          c = text.charAt(++j);
          value.append(c == 'n' ? '\n' : c);
        } else {
          value.append(c);
        }
      }
      out.put(key, value.toString());
      i = j + 1;
      while (i < text.length() && (text.charAt(i) == ',' || text.charAt(i) == ' ')) {
        i++;
      }
    }
    return out;
  }

  private static boolean matchesAll(JsonNode element, String filter) {
    for (String condition : filter.split(",")) {
      int eq = condition.indexOf('=');
      String key = condition.substring(0, eq).trim();
      String value = condition.substring(eq + 1).trim();
      JsonNode field = element.path(key);
      if (field.isMissingNode() || field.isContainer() || !scalar(field).equals(value)) {
        return false;
      }
    }
    return true;
  }

  private static boolean named(JsonNode element, String name) {
    if (element.has("namespace") && element.has("name") && (element.path("namespace").asString("") + "/" + element.path("name").asString("")).equals(name)) {
      return true;
    }
    for (String key : List.of("name", "uuid", "object")) {
      if (element.path(key).isValueNode() && scalar(element.path(key)).equals(name)) {
        return true;
      }
    }
    return false;
  }

  /** A scalar as text, numbers without a trailing {@code .0}. */
  static String scalar(JsonNode value) {
    if (value.isNumber()) {
      double d = value.asDouble();
      return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }
    return value.isNull() ? "null" : value.asString("");
  }
}
