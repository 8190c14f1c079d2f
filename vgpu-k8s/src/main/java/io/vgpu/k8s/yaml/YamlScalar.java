package io.vgpu.k8s.yaml;

import java.math.BigDecimal;
import java.util.Locale;
import java.util.Objects;

/**
 * A single value: its text exactly as written (without quotes) and the kind of token the parser saw.
 *
 * @param position where the value is
 * @param text the value's text
 * @param kind what kind of token it was
 */
public record YamlScalar(Position position, String text, Kind kind) implements YamlNode {

  /** The kinds of scalar token. */
  public enum Kind {
    /** A string, quoted or plain. */
    STRING,
    /** An integer number. */
    INTEGER,
    /** A number with a fraction or exponent. */
    DECIMAL,
    /** {@code true} or {@code false}. */
    BOOLEAN,
    /** {@code null} or an empty value. */
    NULL
  }

  /** Validates the fields. */
  public YamlScalar {
    Objects.requireNonNull(position, "position");
    Objects.requireNonNull(text, "text");
    Objects.requireNonNull(kind, "kind");
  }

  @Override
  public String describe() {
    return kind == Kind.NULL ? "null" : "'" + text + "'";
  }

  /**
   * The value as a string; numbers and booleans give their text.
   *
   * @throws InputException when the value is null
   */
  public String asString(String field) {
    if (kind == Kind.NULL) {
      throw new InputException(position, field + ": expected a value, got null");
    }
    return text;
  }

  /**
   * The value as a whole number within {@code [min, max]}.
   *
   * @throws InputException naming the field and the value when it is not one
   */
  public long asLong(String field, long min, long max) {
    long value;
    try {
      value = new BigDecimal(text.trim()).longValueExact();
    } catch (NumberFormatException | ArithmeticException e) {
      throw new InputException(position, field + ": expected a whole number, got " + describe());
    }
    if (value < min || value > max) {
      throw new InputException(position, field + ": " + value + " is out of range [" + min + ", " + max + "]");
    }
    return value;
  }

  /**
   * The value as an {@code int} within {@code [min, max]}.
   *
   * @throws InputException naming the field and the value when it is not one
   */
  public int asInt(String field, int min, int max) {
    return (int) asLong(field, min, max);
  }

  /**
   * The value as a finite number.
   *
   * @throws InputException naming the field and the value when it is not one
   */
  public double asDouble(String field) {
    try {
      double value = Double.parseDouble(text.trim());
      if (Double.isFinite(value) && !text.isBlank()) {
        return value;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new InputException(position, field + ": expected a number, got " + describe());
  }

  /**
   * The value as a boolean: {@code true} or {@code false} in any case.
   *
   * @throws InputException naming the field and the value when it is not one
   */
  public boolean asBoolean(String field) {
    String t = text.trim().toLowerCase(Locale.ROOT);
    if (t.equals("true")) {
      return true;
    }
    if (t.equals("false")) {
      return false;
    }
    throw new InputException(position, field + ": expected true or false, got " + describe());
  }
}
