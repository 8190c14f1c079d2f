package io.vgpu.examples.lab.kubelet;

import java.util.Map;

/**
 * kubelet's {@code $(VAR)} expansion of env values, commands and args: {@code $(NAME)} becomes the value
 * of NAME when NAME is defined and stays as written when it is not; {@code $$} is an escaped {@code $};
 * a {@code $} followed by anything else, or an unclosed {@code $(}, is kept as it is.
 */
public final class EnvExpansion {
  private EnvExpansion() {}

  /**
   * Expands one string.
   *
   * @param input the string as written in the pod spec
   * @param defined the variables defined so far, by name
   */
  public static String expand(String input, Map<String, String> defined) {
    StringBuilder out = new StringBuilder(input.length());
    int i = 0;
    while (i < input.length()) {
      char c = input.charAt(i);
      if (c != '$' || i + 1 >= input.length()) {
        out.append(c);
        i++;
        continue;
      }
      char next = input.charAt(i + 1);
      if (next == '$') {
        out.append('$');
        i += 2;
      } else if (next == '(') {
        int close = input.indexOf(')', i + 2);
        if (close < 0) {
          out.append(input, i, input.length());
          return out.toString();
        }
        String name = input.substring(i + 2, close);
        String value = defined.get(name);
        out.append(value != null ? value : input.substring(i, close + 1));
        i = close + 1;
      } else {
        out.append(c).append(next);
        i += 2;
      }
    }
    return out.toString();
  }
}
