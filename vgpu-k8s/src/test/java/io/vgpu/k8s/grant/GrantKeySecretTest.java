package io.vgpu.k8s.grant;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The grant key in its Secret: made once by the scheduler, read by node agents, verified against. */
@EnableKubernetesMockClient(crud = true)
class GrantKeySecretTest {
  KubernetesClient client;

  private GrantKeySecret secret() {
    return GrantKeySecret.parse(client, "--grant-key-secret", "kube-system/hami-scheduler-grant-key");
  }

  @Test
  void theFirstSchedulerMakesTheKeyAndLaterOnesReuseIt() throws Exception {
    assertThat(secret().read()).isEmpty();
    GrantKey made = secret().ensure();

    assertThat(secret().ensure()).isEqualTo(made);
    assertThat(secret().read()).contains(made);
    assertThat(client.secrets().inNamespace("kube-system").withName("hami-scheduler-grant-key").get().getData()).containsOnlyKeys(GrantKeySecret.DATA_KEY);
  }

  @Test
  void aSecretWithoutAReadableKeyIsReplacedByTheScheduler() throws Exception {
    client.secrets().inNamespace("kube-system").resource(new SecretBuilder().withNewMetadata().withName("hami-scheduler-grant-key").endMetadata()
        .withData(Map.of(GrantKeySecret.DATA_KEY, "c2hvcnQ=")).build()).create();
    assertThat(secret().read()).as("a node agent finds no usable key").isEmpty();

    GrantKey made = secret().ensure();
    assertThat(secret().read()).contains(made);
  }

  @Test
  void aMalformedFlagIsOneLineNamingFlagAndValue() {
    for (String bad : new String[] {"no-slash", "/name", "ns/", "a/b/c"}) {
      assertThatThrownBy(() -> GrantKeySecret.parse(client, "--grant-key-secret", bad))
          .isInstanceOf(IllegalArgumentException.class).hasMessage("--grant-key-secret: '" + bad + "' is not NAMESPACE/NAME");
    }
  }

  @Test
  void theVerifierReadsTheKeyWhenNeededAndAgainOnlyAfterItsInterval() throws Exception {
    GrantKey key = secret().ensure();
    GrantSignature scheduler = new GrantSignature(key);
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-12-01T00:00:00Z"));
    AtomicInteger reads = new AtomicInteger();
    GrantVerifier verifier = new GrantVerifier(() -> {
      reads.incrementAndGet();
      return secret().read();
    }, InstantSource.fixed(now.get()), Duration.ofSeconds(10));

    String signature = scheduler.sign("uid-1", "worker", "GPU-0,NVIDIA,1024,10:;");
    assertThat(verifier.verify("uid-1", "worker", "GPU-0,NVIDIA,1024,10:;", signature)).isEqualTo(GrantVerifier.Verdict.VALID);
    assertThat(verifier.verify("uid-1", "worker", "GPU-0,NVIDIA,40960,100:;", signature)).isEqualTo(GrantVerifier.Verdict.FORGED);
    assertThat(verifier.verify("uid-1", "worker", "GPU-0,NVIDIA,1024,10:;", null)).isEqualTo(GrantVerifier.Verdict.UNSIGNED);
    assertThat(reads).as("one read within the interval, forged or not").hasValue(1);
  }

  @Test
  void withoutAKeyNothingVerifiesAndAKeyMadeLaterIsPickedUp() {
    AtomicReference<Optional<GrantKey>> stored = new AtomicReference<>(Optional.empty());
    AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-12-01T00:00:00Z"));
    GrantVerifier verifier = new GrantVerifier(stored::get, now::get, Duration.ofSeconds(10));
    GrantKey key = GrantKey.random();
    String signature = new GrantSignature(key).sign("uid-1", "worker", "x");

    assertThat(verifier.verify("uid-1", "worker", "x", signature)).isEqualTo(GrantVerifier.Verdict.NO_KEY);
    stored.set(Optional.of(key));
    assertThat(verifier.verify("uid-1", "worker", "x", signature)).as("not read again within 10 s").isEqualTo(GrantVerifier.Verdict.NO_KEY);
    now.set(now.get().plusSeconds(10));
    assertThat(verifier.verify("uid-1", "worker", "x", signature)).isEqualTo(GrantVerifier.Verdict.VALID);
  }
}
