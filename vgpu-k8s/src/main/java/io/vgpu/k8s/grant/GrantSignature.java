package io.vgpu.k8s.grant;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The scheduler's signature of a grant: {@code v1.} followed by the unpadded base64url HMAC-SHA256,
 * under the {@link GrantKey}, of the pod's UID, the node the scheduler chose and the pod's {@code
 * hami.io/vgpu-devices-allocated} value, each preceded by its length in UTF-16 units and a colon (so
 * that no field can be shifted into another). The UID ties the signature to one
 * pod (a copy on another pod, or on a pod recreated under the same name, does not verify); the node and
 * the cards tie it to this decision. It travels as the pod annotation {@link #ANNOTATION}, which only
 * the scheduler writes.
 */
public final class GrantSignature {
  /** The pod annotation holding the signature. */
  public static final String ANNOTATION = "vgpu.io/grant-signature";

  private static final String VERSION = "v1.";
  private static final String ALGORITHM = "HmacSHA256";

  private final GrantKey key;
  /**
   * A keyed Mac per thread (a Mac is not thread-safe): looking one up among the JDK's providers and
   * keying it cost more than the HMAC of a grant, once per placed pod. {@link Mac#doFinal} leaves it
   * keyed for the next.
   */
  private final ThreadLocal<Mac> macs = ThreadLocal.withInitial(this::keyedMac);

  /** Signs and verifies with {@code key}. */
  public GrantSignature(GrantKey key) {
    this.key = key;
  }

  /**
   * The signature of a grant.
   *
   * @param podUid the pod's {@code metadata.uid}
   * @param node the node the scheduler chose ({@code hami.io/vgpu-node})
   * @param allocated the pod's {@code hami.io/vgpu-devices-allocated}, as written
   */
  public String sign(String podUid, String node, String allocated) {
    return VERSION + Base64.getUrlEncoder().withoutPadding().encodeToString(mac(podUid, node, allocated));
  }

  /**
   * Whether {@code signature} is this key's signature of the grant; compared in constant time. A
   * missing or malformed signature is simply not one.
   */
  public boolean verifies(String podUid, String node, String allocated, String signature) {
    if (podUid.isEmpty() || !signature.startsWith(VERSION)) {
      return false;
    }
    byte[] given;
    try {
      given = Base64.getUrlDecoder().decode(signature.substring(VERSION.length()));
    } catch (IllegalArgumentException e) {
      return false;
    }
    return MessageDigest.isEqual(given, mac(podUid, node, allocated));
  }

  private byte[] mac(String podUid, String node, String allocated) {
    String input = podUid.length() + ":" + podUid + node.length() + ":" + node + allocated.length() + ":" + allocated;
    return macs.get().doFinal(input.getBytes(StandardCharsets.UTF_8));
  }

  private Mac keyedMac() {
    try {
      Mac mac = Mac.getInstance(ALGORITHM);
      mac.init(new SecretKeySpec(key.bytes(), ALGORITHM));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + ALGORITHM, e);
    }
  }
}
