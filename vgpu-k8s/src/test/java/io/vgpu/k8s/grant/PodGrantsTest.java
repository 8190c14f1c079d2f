package io.vgpu.k8s.grant;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.vgpu.api.DeviceGrant;
import io.vgpu.k8s.codec.HamiAnnotations;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A pod's grant as the node agent relies on it: the scheduler's signed decision for this pod and node, or none. */
class PodGrantsTest {
  private static final GrantKey KEY = GrantKey.random();
  private static final String UID = "4f1c1a52-8d2e-4c6b-9a57-0d6a5b3c2e11";
  private static final String ALLOCATED = "GPU-0,NVIDIA,1024,10:;";
  private static final PodGrants VERIFIED = PodGrants.verified(new GrantVerifier(() -> Optional.of(KEY), () -> Instant.EPOCH, Duration.ofSeconds(10)));

  private static Pod pod(String uid, Map<String, String> annotations) {
    return new PodBuilder().withNewMetadata().withName("p").withNamespace("team").withUid(uid).addToAnnotations(annotations).endMetadata().build();
  }

  private static Pod signed(String uid, String node, String allocated) {
    return pod(uid, Map.of(
        HamiAnnotations.ASSIGNED_NODE, node,
        HamiAnnotations.DEVICES_ALLOCATED, allocated,
        GrantSignature.ANNOTATION, new GrantSignature(KEY).sign(uid, node, allocated)));
  }

  @Test
  void theSchedulersSignedGrantIsGranted() {
    assertThat(VERIFIED.of(signed(UID, "n1", ALLOCATED), "n1"))
        .isEqualTo(new PodGrants.Granted(List.of(List.of(new DeviceGrant("GPU-0", "NVIDIA", 1024, 10)))));
  }

  @Test
  void anythingElseIsRefusedWithItsReason() {
    Pod widened = signed(UID, "n1", ALLOCATED);
    widened.getMetadata().getAnnotations().put(HamiAnnotations.DEVICES_ALLOCATED, "GPU-0,NVIDIA,40960,100:;");
    assertThat(VERIFIED.of(widened, "n1"))
        .isEqualTo(new PodGrants.Refused("its vgpu.io/grant-signature does not match the pod's UID, node and grant"));
    Pod copied = signed(UID, "n1", ALLOCATED);
    copied.getMetadata().setUid("another-uid");
    assertThat(VERIFIED.of(copied, "n1")).isInstanceOf(PodGrants.Refused.class);
    assertThat(VERIFIED.of(pod(UID, Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, ALLOCATED)), "n1"))
        .isEqualTo(new PodGrants.Refused("the pod carries no vgpu.io/grant-signature"));
    assertThat(VERIFIED.of(signed(UID, "n2", ALLOCATED), "n1")).as("signed for another node")
        .isEqualTo(new PodGrants.Refused("its hami.io/vgpu-node is 'n2', not n1"));
    PodGrants keyless = PodGrants.verified(new GrantVerifier(Optional::empty, () -> Instant.EPOCH, Duration.ofSeconds(10)));
    assertThat(keyless.of(signed(UID, "n1", ALLOCATED), "n1")).isEqualTo(new PodGrants.Refused("the grant key cannot be read"));
  }

  @Test
  void aPodWithoutAnyGrantHasNone() {
    assertThat(VERIFIED.of(pod(UID, Map.of("team.example/owner", "a")), "n1")).isEqualTo(new PodGrants.NoGrant());
    assertThat(PodGrants.unverified().of(pod(UID, Map.of()), "n1")).isEqualTo(new PodGrants.NoGrant());
  }

  @Test
  void unverifiedGrantsAreTakenAsWrittenButMustBeReadableAndForThisNode() {
    PodGrants unverified = PodGrants.unverified();
    assertThat(unverified.verifies()).isFalse();
    assertThat(unverified.of(pod(UID, Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, ALLOCATED)), "n1"))
        .isInstanceOf(PodGrants.Granted.class);
    assertThat(unverified.of(pod(UID, Map.of(HamiAnnotations.ASSIGNED_NODE, "n1", HamiAnnotations.DEVICES_ALLOCATED, "GPU-0,NVIDIA;x,y:;")), "n1"))
        .isInstanceOf(PodGrants.Refused.class);
    assertThat(unverified.of(pod(UID, Map.of(HamiAnnotations.DEVICES_ALLOCATED, ALLOCATED)), "n1"))
        .isEqualTo(new PodGrants.Refused("its hami.io/vgpu-node is '', not n1"));
  }
}
