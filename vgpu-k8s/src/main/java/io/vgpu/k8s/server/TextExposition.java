package io.vgpu.k8s.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Gauge families written straight into Prometheus's text format (0.0.4), byte for byte as the client
 * library's {@code PrometheusTextFormatWriter} writes the same points (given in its order), without a
 * snapshot object or a label set per point: HAMi's per-card gauges are seven points per card, 280,000
 * lines at 5,000 nodes of 8 cards, and building them as snapshots allocated some 800 MB per scrape.
 * Written into memory ({@link #toByteArray}) or, a chunk at a time, into a stream ({@link
 * #TextExposition(OutputStream)}): at 5,000 nodes the text is tens of MiB, and built whole it outlived
 * the young collections that came while it was built, so each scrape was promoted and followed by a
 * full collection (run V: half a second of pauses per scrape). Not thread-safe: one instance per scrape.
 */
public final class TextExposition {
  /** The buffer's size: small enough for the young generation, reused once written into the sink. */
  private static final int CHUNK = 256 * 1024;
  /** The most bytes one char of text can take: an escaped ASCII char takes 2, any other UTF-16 unit at most 3. */
  private static final int BYTES_PER_CHAR = 3;

  private final OutputStream sink;
  /** The sink when the text is kept in memory; null when it goes into a stream given at construction. */
  private final @Nullable ByteArrayOutputStream kept;
  private byte[] bytes = new byte[CHUNK];
  private int size;

  /** An empty exposition, kept in memory. */
  public TextExposition() {
    this.kept = new ByteArrayOutputStream();
    this.sink = kept;
  }

  /**
   * An exposition written into {@code sink} whenever a chunk is full, in one reused buffer; call {@link
   * #flush} at the end. A failed write is an {@link UncheckedIOException}.
   */
  public TextExposition(OutputStream sink) {
    this.kept = null;
    this.sink = sink;
  }

  /** A gauge family: its name, help and label names, and the fixed bytes of its points' lines. */
  public static final class Family {
    private final String name;
    private final String help;
    private final int labels;
    /** {@code name{first="}, then {@code ",next="} per further label, then {@code "} } (or {@code name } without labels). */
    private final byte[][] pieces;
    private final int fixedBytes;

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
      this.labels = labelNames.length;
      this.pieces = new byte[labelNames.length + 1][];
      if (labelNames.length == 0) {
        pieces[0] = (name + " ").getBytes(StandardCharsets.UTF_8);
      } else {
        pieces[0] = (name + "{" + labelNames[0] + "=\"").getBytes(StandardCharsets.UTF_8);
        for (int i = 1; i < labelNames.length; i++) {
          pieces[i] = ("\"," + labelNames[i] + "=\"").getBytes(StandardCharsets.UTF_8);
        }
        pieces[labelNames.length] = "\"} ".getBytes(StandardCharsets.UTF_8);
      }
      int fixed = 0;
      for (byte[] piece : pieces) {
        fixed += piece.length;
      }
      this.fixedBytes = fixed;
    }

    /** The family's name. */
    public String name() {
      return name;
    }
  }

  /** Starts a family: its {@code # HELP} and {@code # TYPE} lines. Write its points next. */
  public void begin(Family family) {
    String head = "# HELP " + family.name + " ";
    String type = "\n# TYPE " + family.name + " gauge\n";
    reserve(head.length() + BYTES_PER_CHAR * family.help.length() + type.length());
    ascii(head);
    escape(family.help, false);
    ascii(type);
  }

  /**
   * One point of {@code family} (begun last), its label values in the order of the family's label
   * names. The client library writes a family's points sorted by their label values: give them in that order.
   */
  public void gauge(Family family, double value, String... labelValues) {
    if (labelValues.length != family.labels) {
      throw new IllegalArgumentException(family.name + " has " + family.labels + " labels, given " + labelValues.length + " values");
    }
    String number = number(value);
    int bound = family.fixedBytes + number.length() + 1;
    for (String v : labelValues) {
      bound += BYTES_PER_CHAR * v.length();
    }
    // One check for the whole line, then plain stores.
    reserve(bound);
    copy(family.pieces[0]);
    for (int i = 0; i < labelValues.length; i++) {
      escape(labelValues[i], true);
      copy(family.pieces[i + 1]);
    }
    ascii(number);
    bytes[size++] = '\n';
  }

  /** Appends text the client library wrote, e.g. the other families of the registry. */
  public void append(byte[] written) {
    for (int from = 0; from < written.length; ) {
      reserve(1);
      int n = Math.min(written.length - from, bytes.length - size);
      System.arraycopy(written, from, bytes, size, n);
      size += n;
      from += n;
    }
  }

  /** Writes what is buffered into the sink given at construction. */
  public void flush() {
    drain();
  }

  /** The exposition so far, as one array; only for one kept in memory. */
  public byte[] toByteArray() {
    ByteArrayOutputStream out = kept;
    if (out == null) {
      throw new IllegalStateException("this exposition is written into a stream, not kept");
    }
    drain();
    return out.toByteArray();
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

  /**
   * Text as UTF-8, escaped as the format wants it: backslash and newline always, the double quote in
   * label values. Room for {@value #BYTES_PER_CHAR} bytes a char must be reserved.
   */
  private void escape(String s, boolean quoted) {
    byte[] b = bytes;
    int at = size;
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        if (c == '\\' || c == '\n' || c == '"' && quoted) {
          b[at++] = '\\';
          b[at++] = (byte) (c == '\n' ? 'n' : c);
        } else {
          b[at++] = (byte) c;
        }
      } else if (c < 0x800) {
        b[at++] = (byte) (0xC0 | c >> 6);
        b[at++] = (byte) (0x80 | c & 0x3F);
      } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        int cp = Character.toCodePoint(c, s.charAt(++i));
        b[at++] = (byte) (0xF0 | cp >> 18);
        b[at++] = (byte) (0x80 | cp >> 12 & 0x3F);
        b[at++] = (byte) (0x80 | cp >> 6 & 0x3F);
        b[at++] = (byte) (0x80 | cp & 0x3F);
      } else if (Character.isSurrogate(c)) {
        b[at++] = '?'; // a lone surrogate, as the JDK's UTF-8 encoder replaces it
      } else {
        b[at++] = (byte) (0xE0 | c >> 12);
        b[at++] = (byte) (0x80 | c >> 6 & 0x3F);
        b[at++] = (byte) (0x80 | c & 0x3F);
      }
    }
    size = at;
  }

  /** A string known to be ASCII (the format's punctuation, numbers), into reserved room. */
  private void ascii(String s) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      bytes[size++] = (byte) s.charAt(i);
    }
  }

  private void copy(byte[] piece) {
    System.arraycopy(piece, 0, bytes, size, piece.length);
    size += piece.length;
  }

  /** Room for {@code n} more bytes in the current chunk: a chunk without it is written into the sink and reused. */
  private void reserve(int n) {
    if (size + n > bytes.length) {
      drain();
      if (n > bytes.length) {
        bytes = new byte[n];
      }
    }
  }

  private void drain() {
    try {
      sink.write(bytes, 0, size);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    size = 0;
  }
}
