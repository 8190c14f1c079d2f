package io.vgpu.k8s.codec;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Objects;

/**
 * The value of the node lock annotation {@code hami.io/mutex.lock}: {@code <RFC3339>,<namespace>,<pod>},
 * e.g. {@code 2026-08-21T06:20:39Z,default,gpu-pod}. The legacy form is a bare RFC 3339 timestamp, which
 * names no owner.
 */
public final class NodeLockCodec {
  private static final DateTimeFormatter RFC3339 = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ssXXX");
  private static final String SEPARATOR = ",";

  private NodeLockCodec() {}

  /**
   * A decoded lock.
   *
   * @param time when the lock was taken (whole seconds)
   * @param namespace the owning pod's namespace, empty in the legacy form
   * @param pod the owning pod's name, empty in the legacy form
   */
  public record NodeLock(Instant time, String namespace, String pod) {
    /** Validates the fields. */
    public NodeLock {
      Objects.requireNonNull(time, "time");
      Objects.requireNonNull(namespace, "namespace");
      Objects.requireNonNull(pod, "pod");
    }

    /** Whether the lock names its owner. */
    public boolean hasOwner() {
      return !pod.isEmpty();
    }
  }

  /** Encodes a lock taken at {@code time} (truncated to seconds, written in UTC) by a pod. */
  public static String encode(Instant time, String namespace, String pod) {
    return timestamp(time) + SEPARATOR + namespace + SEPARATOR + pod;
  }

  /** The legacy value: a bare timestamp. */
  public static String encodeLegacy(Instant time) {
    return timestamp(time);
  }

  private static String timestamp(Instant time) {
    return RFC3339.format(time.truncatedTo(ChronoUnit.SECONDS).atOffset(ZoneOffset.UTC));
  }

  /**
   * Decodes either form.
   *
   * @throws IllegalArgumentException when the value has other than one or three parts or its time is
   *     not RFC 3339
   */
  public static NodeLock decode(String value) {
    if (!value.contains(SEPARATOR)) {
      return new NodeLock(parseTime(value, value), "", "");
    }
    String[] parts = value.split(SEPARATOR, -1);
    if (parts.length != 3) {
      throw new IllegalArgumentException("malformed lock annotation '" + value + "': expected 3 parts, got " + parts.length);
    }
    return new NodeLock(parseTime(parts[0], value), parts[1], parts[2]);
  }

  private static Instant parseTime(String text, String whole) {
    try {
      return OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant();
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("lock annotation '" + whole + "': time '" + text + "' is not RFC 3339");
    }
  }
}
