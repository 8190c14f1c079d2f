package io.vgpu.k8s.grant;

import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The secret the scheduler signs grants with and the node agents check them with: 32 random bytes.
 * Its {@link #toString} shows only a fingerprint, so a key never reaches a log line.
 */
public final class GrantKey {
  /** The length of a key in bytes. */
  public static final int LENGTH = 32;

  private final byte[] bytes;

  private GrantKey(byte[] bytes) {
    this.bytes = bytes.clone();
  }

  /**
   * A key from its bytes.
   *
   * @throws IllegalArgumentException when it is not {@link #LENGTH} bytes long
   */
  public static GrantKey of(byte[] bytes) {
    if (bytes.length != LENGTH) {
      throw new IllegalArgumentException("a grant key is " + LENGTH + " bytes, not " + bytes.length);
    }
    return new GrantKey(bytes);
  }

  /** A fresh random key. */
  public static GrantKey random() {
    byte[] bytes = new byte[LENGTH];
    new SecureRandom().nextBytes(bytes);
    return new GrantKey(bytes);
  }

  /** A copy of the key's bytes. */
  public byte[] bytes() {
    return bytes.clone();
  }

  /** The first 8 hex digits of the key's SHA-256: which key, never the key. */
  public String fingerprint() {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes), 0, 4);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof GrantKey k && MessageDigest.isEqual(bytes, k.bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    return "GrantKey[" + fingerprint() + "]";
  }
}
