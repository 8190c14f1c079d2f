package io.vgpu.k8s.codec;

/**
 * Writes JSON string literals exactly as Go's {@code encoding/json} does, so that annotations vgpu writes
 * are byte-identical to HAMi's: besides quotes, backslashes and control characters, {@code <}, {@code >},
 * {@code &}, U+2028 and U+2029 are escaped as a backslash, {@code u} and four hex digits.
 */
public final class GoJsonStrings {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private GoJsonStrings() {}

  /** {@code value} as a JSON string literal, quotes included. */
  public static String quote(String value) {
    StringBuilder out = new StringBuilder(value.length() + 2);
    append(out, value);
    return out.toString();
  }

  /** Appends {@code value} to {@code out} as a JSON string literal, quotes included. */
  public static void append(StringBuilder out, String value) {
    out.append('"');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == '\u2028' || c == '\u2029') {
            out.append("\\u").append(HEX[c >> 12 & 0xF]).append(HEX[c >> 8 & 0xF]).append(HEX[c >> 4 & 0xF]).append(HEX[c & 0xF]);
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
