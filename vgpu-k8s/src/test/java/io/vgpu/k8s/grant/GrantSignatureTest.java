package io.vgpu.k8s.grant;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The scheduler's signature of a grant: bound to the pod's UID, its node and its cards, under one key. */
class GrantSignatureTest {
  private static final GrantKey KEY = GrantKey.of(bytes('k'));
  private static final String UID = "4f1c1a52-8d2e-4c6b-9a57-0d6a5b3c2e11";
  private static final String NODE = "worker";
  private static final String ALLOCATED = "GPU-0,NVIDIA,1024,10:;";

  private static byte[] bytes(char c) {
    byte[] b = new byte[GrantKey.LENGTH];
    Arrays.fill(b, (byte) c);
    return b;
  }

  @Test
  void theSignatureIsAGoldenStringOfTheKeyAndTheGrant() {
    // HMAC-SHA256 over "36:<uid>6:worker22:<allocated>", unpadded base64url, after "v1." (checked with Python's hmac)
    assertThat(new GrantSignature(KEY).sign(UID, NODE, ALLOCATED)).isEqualTo("v1.miyhMHsJBH2ae2RiyDMXlu_H8EF03msLaVovJaI6wbY");
  }

  /** One signer on many threads at once, and many times on each: every signature is the golden one. */
  @Test
  void aSignerSharedByThreadsSignsAsOneAlone() throws Exception {
    GrantSignature signer = new GrantSignature(KEY);
    String golden = "v1.miyhMHsJBH2ae2RiyDMXlu_H8EF03msLaVovJaI6wbY";
    ExecutorService threads = Executors.newFixedThreadPool(4);
    try {
      List<Future<Set<String>>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        results.add(threads.submit(() -> {
          Set<String> seen = new HashSet<>();
          for (int i = 0; i < 2_000; i++) {
            seen.add(signer.sign(UID, NODE, ALLOCATED));
            signer.sign("other-" + i, NODE, ALLOCATED);
          }
          return seen;
        }));
      }
      for (Future<Set<String>> r : results) {
        assertThat(r.get()).containsExactly(golden);
      }
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void itVerifiesExactlyWhatWasSigned() {
    GrantSignature signer = new GrantSignature(KEY);
    String signature = signer.sign(UID, NODE, ALLOCATED);

    assertThat(signer.verifies(UID, NODE, ALLOCATED, signature)).isTrue();
    assertThat(signer.verifies("another-uid", NODE, ALLOCATED, signature)).as("a pod recreated under the same name").isFalse();
    assertThat(signer.verifies(UID, "worker2", ALLOCATED, signature)).as("another node").isFalse();
    assertThat(signer.verifies(UID, NODE, "GPU-0,NVIDIA,40960,100:;", signature)).as("a widened grant").isFalse();
    assertThat(signer.verifies(UID, NODE, "GPU-1,NVIDIA,1024,10:;", signature)).as("another card").isFalse();
    assertThat(new GrantSignature(GrantKey.of(bytes('x'))).verifies(UID, NODE, ALLOCATED, signature)).as("another key").isFalse();
  }

  @Test
  void malformedSignaturesAreNoSignatures() {
    GrantSignature signer = new GrantSignature(KEY);
    for (String bad : new String[] {"", "v1.", "v2." + signer.sign(UID, NODE, ALLOCATED).substring(3), "v1.!!!", "v1.AAAA", "garbage"}) {
      assertThat(signer.verifies(UID, NODE, ALLOCATED, bad)).as(bad).isFalse();
    }
    assertThat(signer.verifies("", NODE, ALLOCATED, signer.sign("", NODE, ALLOCATED))).as("a pod without UID").isFalse();
  }

  @Test
  void theLinesCannotBeShiftedIntoEachOther() {
    GrantSignature signer = new GrantSignature(KEY);
    assertThat(signer.sign("a", "b\nc", "d")).isNotEqualTo(signer.sign("a\nb", "c", "d"));
  }

  @Test
  void aKeyPrintsOnlyItsFingerprint() {
    assertThat(KEY.toString()).isEqualTo("GrantKey[" + KEY.fingerprint() + "]").doesNotContain(new String(bytes('k'), StandardCharsets.ISO_8859_1));
    assertThat(KEY.fingerprint()).hasSize(8);
  }
}
