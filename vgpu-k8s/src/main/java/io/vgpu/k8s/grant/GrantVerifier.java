package io.vgpu.k8s.grant;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent's check of a grant against the scheduler's signature. The key is read from its
 * Secret when first needed and read again, at most once per {@code refreshEvery}, while it is missing
 * or a signature does not verify (the scheduler may have made a new key since). Without a key nothing
 * verifies: a grant is served only when it is known to be the scheduler's.
 */
public final class GrantVerifier {
  private static final Logger LOG = LoggerFactory.getLogger(GrantVerifier.class);

  /** The outcome of a check. */
  public enum Verdict {
    /** The signature is the scheduler's for this pod, node and grant. */
    VALID("signed by the scheduler"),
    /** The pod carries no signature. */
    UNSIGNED("the pod carries no " + GrantSignature.ANNOTATION),
    /** The pod's signature does not match its UID, node and grant: edited after the scheduler wrote it. */
    FORGED("its " + GrantSignature.ANNOTATION + " does not match the pod's UID, node and grant"),
    /** No key could be read, so nothing can be checked. */
    NO_KEY("the grant key cannot be read");

    private final String reason;

    Verdict(String reason) {
      this.reason = reason;
    }

    /** Why, in words, for Events and log lines. */
    public String reason() {
      return reason;
    }
  }

  /** Where keys come from. */
  @FunctionalInterface
  public interface KeySource {
    /**
     * The current key, if there is one.
     *
     * @throws IOException when it cannot be read
     */
    Optional<GrantKey> read() throws IOException;

    /** The place the key is read from, for messages. */
    default String where() {
      return "the grant key";
    }
  }

  private final KeySource source;
  private final InstantSource clock;
  private final Duration refreshEvery;
  private @Nullable GrantSignature signature;
  private @Nullable Instant lastRead;

  /**
   * A verifier reading its key from {@code source}.
   *
   * @param refreshEvery the least time between two reads of the key
   */
  public GrantVerifier(KeySource source, InstantSource clock, Duration refreshEvery) {
    this.source = source;
    this.clock = clock;
    this.refreshEvery = refreshEvery;
  }

  /** A verifier reading the key from a Secret, again at most every 10 seconds. */
  public static GrantVerifier of(GrantKeySecret secret) {
    return new GrantVerifier(
        new KeySource() {
          @Override
          public Optional<GrantKey> read() throws IOException {
            return secret.read();
          }

          @Override
          public String where() {
            return "Secret " + secret.where();
          }
        },
        InstantSource.system(),
        Duration.ofSeconds(10));
  }

  /**
   * Checks a pod's grant.
   *
   * @param podUid the pod's UID
   * @param node the node the grant names ({@code hami.io/vgpu-node})
   * @param allocated the pod's {@code hami.io/vgpu-devices-allocated}
   * @param signature the pod's {@link GrantSignature#ANNOTATION}, or null
   */
  public synchronized Verdict verify(String podUid, String node, String allocated, @Nullable String signature) {
    if (signature == null || signature.isEmpty()) {
      return Verdict.UNSIGNED;
    }
    GrantSignature current = this.signature;
    if (current != null && current.verifies(podUid, node, allocated, signature)) {
      return Verdict.VALID;
    }
    if (current == null || mayReadAgain()) {
      current = readKey();
      if (current != null && current.verifies(podUid, node, allocated, signature)) {
        return Verdict.VALID;
      }
    }
    return current == null ? Verdict.NO_KEY : Verdict.FORGED;
  }

  private boolean mayReadAgain() {
    return lastRead == null || !clock.instant().isBefore(lastRead.plus(refreshEvery));
  }

  private @Nullable GrantSignature readKey() {
    if (!mayReadAgain()) {
      return signature;
    }
    lastRead = clock.instant();
    try {
      Optional<GrantKey> key = source.read();
      if (key.isEmpty()) {
        LOG.warn("{} holds no grant key: no grant can be verified, so none is served", source.where());
        return signature;
      }
      GrantSignature read = new GrantSignature(key.get());
      if (signature == null) {
        LOG.info("grant key {} read from {}", key.get().fingerprint(), source.where());
      }
      signature = read;
      return read;
    } catch (IOException e) {
      LOG.warn("cannot read {}: {}", source.where(), e.getMessage());
      return signature;
    }
  }
}
