package io.vgpu.k8s.grant;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.pod.PodRefs;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A pod's grant as the node agent may rely on it: what Allocate serves and what the watchdog holds a
 * container to. With a {@link GrantVerifier} a grant is the pod's {@code
 * hami.io/vgpu-devices-allocated} only when the scheduler's signature of it verifies for the pod's UID
 * and this node; anything else is no grant. Without one ({@link #unverified}, for deployments that have
 * no grant key) the annotations are taken as written, as before signatures existed.
 */
public final class PodGrants {
  /** What a pod holds on this node. */
  public sealed interface Held permits Granted, NoGrant, Refused {}

  /**
   * The scheduler's grant: one device list per container, init containers first.
   *
   * @param perContainer the signed {@code hami.io/vgpu-devices-allocated}, decoded
   */
  public record Granted(List<List<DeviceGrant>> perContainer) implements Held {
    /** Copies the lists. */
    public Granted {
      perContainer = perContainer.stream().map(List::copyOf).toList();
    }
  }

  /** The pod carries no grant at all: vgpu's scheduler never placed it. */
  public record NoGrant() implements Held {}

  /**
   * The pod carries a grant that is not the scheduler's for it on this node.
   *
   * @param why in words, for Events and log lines: what was wrong with it
   */
  public record Refused(String why) implements Held {}

  private final @Nullable GrantVerifier verifier;

  private PodGrants(@Nullable GrantVerifier verifier) {
    this.verifier = verifier;
  }

  /** Grants that count only when the scheduler's signature verifies. */
  public static PodGrants verified(GrantVerifier verifier) {
    return new PodGrants(verifier);
  }

  /** Grants taken as the annotations say, unchecked: anybody who may edit the pod may edit them. */
  public static PodGrants unverified() {
    return new PodGrants(null);
  }

  /** Whether signatures are checked. */
  public boolean verifies() {
    return verifier != null;
  }

  /**
   * What {@code pod} holds on {@code node}.
   *
   * @param node this node: a grant for another node is no grant here
   */
  public Held of(Pod pod, String node) {
    Map<String, String> annotations = PodRefs.annotations(pod);
    String allocated = annotations.get(HamiAnnotations.DEVICES_ALLOCATED);
    String assigned = annotations.get(HamiAnnotations.ASSIGNED_NODE);
    if (allocated == null && assigned == null && !annotations.containsKey(GrantSignature.ANNOTATION)) {
      return new NoGrant();
    }
    if (allocated == null) {
      return new Refused("it has no " + HamiAnnotations.DEVICES_ALLOCATED);
    }
    if (!node.equals(assigned)) {
      return new Refused("its " + HamiAnnotations.ASSIGNED_NODE + " is '" + (assigned == null ? "" : assigned) + "', not " + node);
    }
    if (verifier != null) {
      String uid = pod.getMetadata() == null || pod.getMetadata().getUid() == null ? "" : pod.getMetadata().getUid();
      GrantVerifier.Verdict verdict = verifier.verify(uid, assigned, allocated, annotations.get(GrantSignature.ANNOTATION));
      if (verdict != GrantVerifier.Verdict.VALID) {
        return new Refused(verdict.reason());
      }
    }
    try {
      return new Granted(DeviceListCodec.decode(allocated));
    } catch (IllegalArgumentException e) {
      return new Refused("its " + HamiAnnotations.DEVICES_ALLOCATED + " cannot be read: " + e.getMessage());
    }
  }
}
