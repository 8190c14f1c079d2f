package io.vgpu.k8s.pod;

import java.math.BigDecimal;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Kubernetes resource quantities ({@code 1}, {@code 500m}, {@code 4Gi}, {@code 1e3}), parsed to exact
 * numbers with the API server's grammar: an optionally signed decimal number followed by a binary
 * suffix ({@code Ki Mi Gi Ti Pi Ei}), a decimal suffix ({@code n u m k M G T P E}) or an exponent
 * ({@code e3}, {@code E-2}).
 */
public final class Quantities {
  private static final Pattern QUANTITY =
      Pattern.compile("([+-]?)(\\d+(?:\\.\\d*)?|\\.\\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\\d+)?");
  private static final BigDecimal KIBI = BigDecimal.valueOf(1024);
  private static final Map<String, Integer> BINARY_POWERS = Map.of("Ki", 1, "Mi", 2, "Gi", 3, "Ti", 4, "Pi", 5, "Ei", 6);
  private static final Map<String, Integer> DECIMAL_EXPONENTS =
      Map.of("n", -9, "u", -6, "m", -3, "k", 3, "M", 6, "G", 9, "T", 12, "P", 15, "E", 18);

  private Quantities() {}

  /**
   * Parses a quantity.
   *
   * @throws IllegalArgumentException when the text is not a quantity; the message quotes it
   */
  public static BigDecimal parse(String text) {
    Matcher m = QUANTITY.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a valid quantity");
    }
    BigDecimal number = new BigDecimal(m.group(2).endsWith(".") ? m.group(2) + "0" : m.group(2));
    if (m.group(1).equals("-")) {
      number = number.negate();
    }
    String suffix = m.group(3);
    if (suffix == null) {
      return number;
    }
    Integer power = BINARY_POWERS.get(suffix);
    if (power != null) {
      return number.multiply(KIBI.pow(power));
    }
    Integer exponent = DECIMAL_EXPONENTS.get(suffix);
    if (exponent == null) {
      try {
        exponent = Integer.parseInt(suffix.substring(1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("'" + text + "' has an exponent out of range");
      }
    }
    return number.scaleByPowerOfTen(exponent);
  }

  /** Whether the quantity is a whole number. */
  public static boolean isInteger(BigDecimal value) {
    return value.signum() == 0 || value.stripTrailingZeros().scale() <= 0;
  }

  /** Whether the text is a quantity at all. */
  public static boolean isValid(String text) {
    try {
      parse(text);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
