package io.vgpu.k8s.server;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Gauge families written straight into Prometheus's text format (0.0.4), byte for byte as the client
 * library's {@code PrometheusTextFormatWriter} writes the same points (given in its order), without a snapshot object, a
 * label set or a string per point: HAMi's per-card gauges are seven points per card, 280,000 lines at
 * 5,000 nodes of 8 cards, and building them as snapshots allocated some 800 MB per scrape. Not
 * thread-safe: one instance per scrape.
 */
public final class TextExposition {
  private byte[] bytes;
  private int size;

  /** An exposition whose buffer starts at {@code expectedBytes} (the last scrape's size saves the regrowth). */
  public TextExposition(int expectedBytes) {
    this.bytes = new byte[Math.max(1024, expectedBytes)];
  }

  /** A gauge family: its name, help and label names. */
  public static final class Family {
    private final String name;
    private final String help;
    private final String[] names;

    /**
     * A gauge family.
     *
     * @param labelNames its labels' names, sorted (the order the client library writes them in, and
     *     the order {@link #gauge} takes their values in)
     * @throws IllegalArgumentException when they are not sorted
     */
    public Family(String name, String help, String... labelNames) {
      for (int i = 1; i < labelNames.length; i++) {
        if (labelNames[i - 1].compareTo(labelNames[i]) >= 0) {
          throw new IllegalArgumentException(name + "'s label names are not sorted: " + String.join(",", labelNames));
        }
      }
      this.name = name;
      this.help = help;
      this.names = labelNames.clone();
    }

    /** The family's name. */
    public String name() {
      return name;
    }
  }

  /** Starts a family: its {@code # HELP} and {@code # TYPE} lines. Write its points next. */
  public void begin(Family family) {
    ascii("# HELP ");
    ascii(family.name);
    ascii(" ");
    text(family.help, false);
    ascii("\n# TYPE ");
    ascii(family.name);
    ascii(" gauge\n");
  }

  /**
   * One point of {@code family} (begun last), its label values in the order of the family's label
   * names. The client library writes a family's points sorted by their label values: give them in that order.
   */
  public void gauge(Family family, double value, String... labelValues) {
    if (labelValues.length != family.names.length) {
      throw new IllegalArgumentException(family.name + " has " + family.names.length + " labels, given " + labelValues.length + " values");
    }
    ascii(family.name);
    if (labelValues.length > 0) {
      byte separator = '{';
      for (int i = 0; i < labelValues.length; i++) {
        put(separator);
        ascii(family.names[i]);
        ascii("=\"");
        text(labelValues[i], true);
        put((byte) '"');
        separator = ',';
      }
      put((byte) '}');
    }
    put((byte) ' ');
    ascii(number(value));
    put((byte) '\n');
  }

  /** Appends text the client library wrote, e.g. the other families of the registry. */
  public void append(byte[] written) {
    ensure(written.length);
    System.arraycopy(written, 0, bytes, size, written.length);
    size += written.length;
  }

  /** The exposition so far. */
  public byte[] toByteArray() {
    return Arrays.copyOf(bytes, size);
  }

  /** The client library's rendering of a value. */
  private static String number(double value) {
    if (value == Double.POSITIVE_INFINITY) {
      return "+Inf";
    }
    if (value == Double.NEGATIVE_INFINITY) {
      return "-Inf";
    }
    return Double.toString(value);
  }

  /** Text escaped as the format wants it: backslash and newline always, the double quote in label values. */
  private void text(String s, boolean quoted) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c == '\\') {
        ascii("\\\\");
      } else if (c == '\n') {
        ascii("\\n");
      } else if (c == '"' && quoted) {
        ascii("\\\"");
      } else if (c < 0x80) {
        put((byte) c);
      } else {
        // Rare (a card's model name): the rest of the string as UTF-8, escaping as above.
        unicode(s.substring(i), quoted);
        return;
      }
    }
  }

  private void unicode(String rest, boolean quoted) {
    String escaped = rest.replace("\\", "\\\\").replace("\n", "\\n");
    if (quoted) {
      escaped = escaped.replace("\"", "\\\"");
    }
    byte[] utf8 = escaped.getBytes(StandardCharsets.UTF_8);
    append(utf8);
  }

  /** A string known to be ASCII (names, the format's punctuation, numbers). */
  private void ascii(String s) {
    int n = s.length();
    ensure(n);
    for (int i = 0; i < n; i++) {
      bytes[size++] = (byte) s.charAt(i);
    }
  }

  private void put(byte b) {
    ensure(1);
    bytes[size++] = b;
  }

  private void ensure(int more) {
    if (size + more > bytes.length) {
      bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
    }
  }
}
