package io.vgpu.k8s.scheduler;

import io.vgpu.k8s.certificates.CertificateIssuer;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.server.ReloadingKeyManager;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import javax.net.ssl.X509KeyManager;

/**
 * {@code vgpu scheduler --warm-up-only}: the scheduler's start-up warm-up on its own, reaching no
 * cluster and serving nothing, after which the JVM exits. It is the training run of a JVM that keeps
 * what it learned for the next start: JDK 25's ahead-of-time cache (JEP 483 and 515), written by {@code
 * java -XX:AOTCacheOutput=FILE ... scheduler --warm-up-only} and read by the scheduler with {@code
 * -XX:AOTCache=FILE}, holds the classes these rounds loaded and linked and the profiles of the methods
 * they ran, so that the scheduler's first pods are not spent compiling.
 *
 * <p>The rounds are the ones the scheduler runs before it listens, with the same private ledger following
 * their pods through the loopback API's watches, under the same flags: the device
 * configuration and policies, {@code --warm-up-rounds}, signed grants where {@code --grant-key-secret}
 * is given (with the warm-up's own key: the Secret is not read). TLS uses {@code --cert_file}'s
 * certificate or, without one, a throwaway certificate, since the chart's scheduler always serves TLS.
 */
public final class WarmUpTraining {
  private WarmUpTraining() {}

  /**
   * Runs the warm-up as {@code options} and {@code config} have the scheduler run it.
   *
   * @return one line saying what ran
   * @throws IOException when the certificate cannot be read, or a throwaway one not made
   */
  public static String run(SchedulerOptions options, DeviceConfig config) throws IOException {
    int rounds = WarmUpRounds.forThisJvm(options.warmUpRounds());
    if (rounds <= 0) {
      throw new IllegalArgumentException("--warm-up-only: --warm-up-rounds is 0, so there is nothing to run");
    }
    X509KeyManager keys = options.certFile().isPresent()
        ? new ReloadingKeyManager(options.certFile().get(), options.keyFile().orElseThrow(), Duration.ofSeconds(10), Clock.systemUTC())
        : throwawayKeys();
    WarmUp.Outcome outcome = new WarmUp(SchedulerServer.effective(options, config), SchedulerServer.json(), null, options.grantKeySecret().isPresent())
        .runOverLoopback(rounds, SchedulerServer.WARM_UP_BUDGET, keys);
    return "warm-up only: " + outcome.rounds() + " rounds" + (outcome.overLoopback() ? " over the loopback with TLS" : " in-process") + ", " + outcome.placed()
        + " placed, " + outcome.writes() + " writes answered, " + outcome.podEvents() + " pod watch events followed, in " + outcome.took().toMillis() + " ms";
  }

  /**
   * A certificate for 127.0.0.1, made as {@code vgpu certificates} makes the scheduler's. The key manager
   * loads its files when made, so they are gone before the warm-up starts.
   */
  private static X509KeyManager throwawayKeys() throws IOException {
    Path dir = Files.createTempDirectory("vgpu-warm-up");
    try {
      Instant now = Instant.now();
      CertificateIssuer.Issued ca = CertificateIssuer.authority("vgpu warm-up", now, Duration.ofHours(1));
      CertificateIssuer.Issued server = CertificateIssuer.server(ca, List.of("localhost"), List.of("127.0.0.1"), now, Duration.ofHours(1));
      Path cert = Files.writeString(dir.resolve("tls.crt"), server.certificatePem() + ca.certificatePem());
      Path key = Files.writeString(dir.resolve("tls.key"), server.keyPem());
      return new ReloadingKeyManager(cert, key, Duration.ofHours(1), Clock.systemUTC());
    } finally {
      try (Stream<Path> paths = Files.walk(dir)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
