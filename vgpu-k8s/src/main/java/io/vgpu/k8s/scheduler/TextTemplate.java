package io.vgpu.k8s.scheduler;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A text with {@code @NAME@} placeholders, split once where they stand and filled in one pass: the
 * warm-up makes thousands of pod texts that differ only in a few values, without building and
 * writing a JSON tree for each.
 */
final class TextTemplate {
  private static final Pattern PLACEHOLDER = Pattern.compile("@([A-Z0-9_]+)@");

  private final String[] parts;
  private final String[] names;
  private final int length;

  private TextTemplate(String[] parts, String[] names, int length) {
    this.parts = parts;
    this.names = names;
    this.length = length;
  }

  /** The template of {@code text}, whose {@code @NAME@}s are its placeholders. */
  static TextTemplate of(String text) {
    List<String> parts = new ArrayList<>();
    List<String> names = new ArrayList<>();
    Matcher m = PLACEHOLDER.matcher(text);
    int at = 0;
    while (m.find()) {
      parts.add(text.substring(at, m.start()));
      names.add(m.group(1));
      at = m.end();
    }
    parts.add(text.substring(at));
    return new TextTemplate(parts.toArray(new String[0]), names.toArray(new String[0]), text.length());
  }

  /**
   * The text with each placeholder replaced by its value in {@code values}.
   *
   * @throws IllegalArgumentException when a placeholder has no value
   */
  String fill(Map<String, String> values) {
    StringBuilder out = new StringBuilder(length + 256);
    for (int i = 0; i < names.length; i++) {
      String value = values.get(names[i]);
      if (value == null) {
        throw new IllegalArgumentException("no value for the placeholder @" + names[i] + "@");
      }
      out.append(parts[i]).append(value);
    }
    return out.append(parts[names.length]).toString();
  }
}
