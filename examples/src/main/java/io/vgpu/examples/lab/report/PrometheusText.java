package io.vgpu.examples.lab.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads the Prometheus text exposition format into LAB.md's flat form: one entry per sample, keyed by
 * the metric name followed by its labels sorted by name ({@code name{a="1",b="2"}}, no braces without
 * labels, values escaped as in the text format), with the sample's value ({@code NaN} and infinities
 * kept as the format writes them).
 */
public final class PrometheusText {
  private PrometheusText() {}

  /** One sample's value: a finite number, or NaN/+Inf/-Inf. */
  public record Value(double number, String text) {
    /** Whether the value is a finite number. */
    public boolean finite() {
      return Double.isFinite(number);
    }
  }

  /**
   * Parses an exposition.
   *
   * @throws IllegalArgumentException on a line that is not a sample, a comment or blank
   */
  public static Map<String, Value> parse(String exposition) {
    Map<String, Value> out = new LinkedHashMap<>();
    for (String raw : exposition.split("\n")) {
      String line = raw.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int i = 0;
      while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ' && line.charAt(i) != '\t') {
        i++;
      }
      String name = line.substring(0, i);
      TreeMap<String, String> labels = new TreeMap<>();
      if (i < line.length() && line.charAt(i) == '{') {
        i = labels(line, i + 1, labels);
      }
      String[] rest = line.substring(i).strip().split("\\s+");
      if (name.isEmpty() || rest.length == 0 || rest[0].isEmpty()) {
        throw new IllegalArgumentException("not a sample: " + line);
      }
      out.put(key(name, labels), value(rest[0]));
    }
    return out;
  }

  /** LAB.md's key of a sample. */
  public static String key(String name, Map<String, String> labels) {
    if (labels.isEmpty()) {
      return name;
    }
    List<String> parts = new ArrayList<>();
    new TreeMap<>(labels).forEach((k, v) -> parts.add(k + "=\"" + escape(v) + "\""));
    return name + "{" + String.join(",", parts) + "}";
  }

  /** The metric name of a sample's key ({@link #key}). */
  public static String name(String key) {
    int brace = key.indexOf('{');
    return brace < 0 ? key : key.substring(0, brace);
  }

  /**
   * The labels of a sample's key ({@link #key}), unescaped.
   *
   * @throws IllegalArgumentException when the key's labels are malformed
   */
  public static Map<String, String> labels(String key) {
    TreeMap<String, String> labels = new TreeMap<>();
    int brace = key.indexOf('{');
    if (brace >= 0) {
      labels(key, brace + 1, labels);
    }
    return labels;
  }

  private static int labels(String line, int i, Map<String, String> labels) {
    while (i < line.length()) {
      char c = line.charAt(i);
      if (c == '}') {
        return i + 1;
      }
      if (c == ',' || c == ' ') {
        i++;
        continue;
      }
      int eq = line.indexOf('=', i);
      if (eq < 0 || eq + 1 >= line.length() || line.charAt(eq + 1) != '"') {
        throw new IllegalArgumentException("malformed labels: " + line);
      }
      String key = line.substring(i, eq).strip();
      StringBuilder value = new StringBuilder();
      int j = eq + 2;
      while (j < line.length() && line.charAt(j) != '"') {
        char d = line.charAt(j);
        if (d == '\\' && j + 1 < line.length()) {
          char e = line.charAt(++j);
          value.append(e == 'n' ? '\n' : e);
        } else {
          value.append(d);
        }
        j++;
      }
      if (j >= line.length()) {
        throw new IllegalArgumentException("unterminated label value: " + line);
      }
      labels.put(key, value.toString());
      i = j + 1;
    }
    throw new IllegalArgumentException("unterminated labels: " + line);
  }

  private static String escape(String v) {
    return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
  }

  private static Value value(String text) {
    return switch (text) {
      case "NaN" -> new Value(Double.NaN, "NaN");
      case "+Inf", "Inf" -> new Value(Double.POSITIVE_INFINITY, "+Inf");
      case "-Inf" -> new Value(Double.NEGATIVE_INFINITY, "-Inf");
      default -> new Value(Double.parseDouble(text), text);
    };
  }
}
