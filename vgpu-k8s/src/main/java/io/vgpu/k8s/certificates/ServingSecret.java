package io.vgpu.k8s.certificates;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.k8s.server.PemCredentials;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler's serving certificate and its CA, kept in one Secret ({@code kubernetes.io/tls} with
 * {@code ca.crt} and {@code ca.key} beside {@code tls.crt} and {@code tls.key}) so that every replica
 * and every restart serves a certificate the webhook's {@code caBundle} trusts. The first pod to start
 * makes them; later ones reuse them while the certificate covers the names asked for and is valid for
 * longer than {@link #RENEW_BEFORE}; otherwise it is re-issued by the same CA (so the {@code caBundle}
 * stays right for replicas still serving the old one), and the CA too once it is near its end. A
 * Secret of the same name that does not hold all four keys (HAMi's certgen writes {@code ca},
 * {@code cert}, {@code key}) is replaced. Writes carry the read resourceVersion, so two pods starting
 * at once cannot overwrite each other: the loser reads the winner's Secret and uses it.
 */
public final class ServingSecret {
  private static final Logger LOG = LoggerFactory.getLogger(ServingSecret.class);

  /** How long a CA is valid. */
  public static final Duration CA_VALIDITY = Duration.ofDays(3650);
  /** How long a serving certificate is valid. */
  public static final Duration CERTIFICATE_VALIDITY = Duration.ofDays(1825);
  /** A certificate (or CA) valid for less than this is replaced when a pod starts. */
  public static final Duration RENEW_BEFORE = Duration.ofDays(365);

  /** The Secret key of the CA certificate. */
  public static final String CA_CERT = "ca.crt";
  /** The Secret key of the CA's private key. */
  public static final String CA_KEY = "ca.key";
  /** The Secret key of the serving certificate. */
  public static final String TLS_CERT = "tls.crt";
  /** The Secret key of the serving certificate's private key. */
  public static final String TLS_KEY = "tls.key";

  private static final int ATTEMPTS = 5;

  private final KubernetesClient client;
  private final String namespace;
  private final String name;
  private final Clock clock;

  /**
   * The Secret {@code namespace/name}.
   *
   * @param clock the time certificates are judged and issued at
   */
  public ServingSecret(KubernetesClient client, String namespace, String name, Clock clock) {
    this.client = client;
    this.namespace = namespace;
    this.name = name;
    this.clock = clock;
  }

  /**
   * The serving certificate and its CA.
   *
   * @param ca the CA that signed {@code serving}
   * @param serving the serving certificate and its key
   */
  public record Material(CertificateIssuer.Issued ca, CertificateIssuer.Issued serving) {}

  /**
   * The Secret's certificate for these names, made or renewed (and stored) when the Secret lacks a
   * usable one.
   *
   * @throws IOException when the Secret can be neither read nor written; the message names it
   */
  public Material ensure(List<String> dnsNames, List<String> ipAddresses) throws IOException {
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      Instant now = clock.instant();
      Secret current;
      try {
        current = client.secrets().inNamespace(namespace).withName(name).get();
      } catch (KubernetesClientException e) {
        throw new IOException("cannot read Secret " + where() + ": " + e.getMessage(), e);
      }
      Optional<Material> stored = Optional.empty();
      String problem;
      if (current == null) {
        problem = "it does not exist";
      } else {
        Reading reading = read(current, dnsNames, ipAddresses, now);
        stored = reading.material();
        problem = reading.problem();
        if (problem == null && stored.isPresent()) {
          LOG.info("serving certificate from Secret {} (valid until {})", where(), stored.get().serving().certificate().getNotAfter().toInstant());
          return stored.get();
        }
      }
      CertificateIssuer.Issued ca =
          stored.map(Material::ca).filter(c -> validBeyond(c.certificate(), now.plus(RENEW_BEFORE))).orElse(null);
      boolean newCa = ca == null;
      if (newCa) {
        ca = CertificateIssuer.authority("vgpu-scheduler-ca", now, CA_VALIDITY);
      }
      Material made = new Material(ca, CertificateIssuer.server(ca, dnsNames, ipAddresses, now, CERTIFICATE_VALIDITY));
      if (write(current, made)) {
        LOG.info("{} a serving certificate for {} in Secret {}{}: {}", current == null ? "stored" : "replaced", names(dnsNames, ipAddresses), where(),
            newCa ? " with a new CA" : " signed by its CA", problem);
        return made;
      }
      LOG.info("Secret {} was written by another pod meanwhile; reading it again", where());
    }
    throw new IOException("Secret " + where() + " kept changing while this pod tried to write it (" + ATTEMPTS + " attempts)");
  }

  private record Reading(Optional<Material> material, @Nullable String problem) {}

  private Reading read(Secret secret, List<String> dnsNames, List<String> ipAddresses, Instant now) {
    Map<String, String> data = secret.getData() == null ? Map.of() : secret.getData();
    List<String> missing = new ArrayList<>();
    for (String key : List.of(CA_CERT, CA_KEY, TLS_CERT, TLS_KEY)) {
      if (!data.containsKey(key)) {
        missing.add(key);
      }
    }
    if (!missing.isEmpty()) {
      return new Reading(Optional.empty(), "it lacks " + String.join(", ", missing));
    }
    Material material;
    try {
      PemCredentials ca = PemCredentials.parse(decode(data, CA_CERT), where() + " " + CA_CERT, decode(data, CA_KEY), where() + " " + CA_KEY);
      PemCredentials serving = PemCredentials.parse(decode(data, TLS_CERT), where() + " " + TLS_CERT, decode(data, TLS_KEY), where() + " " + TLS_KEY);
      material = new Material(new CertificateIssuer.Issued(ca.chain().get(0), ca.key()), new CertificateIssuer.Issued(serving.chain().get(0), serving.key()));
    } catch (IOException | IllegalArgumentException e) {
      return new Reading(Optional.empty(), "it is unreadable (" + e.getMessage() + ")");
    }
    X509Certificate certificate = material.serving().certificate();
    try {
      certificate.verify(material.ca().certificate().getPublicKey());
    } catch (GeneralSecurityException e) {
      return new Reading(Optional.empty(), TLS_CERT + " is not signed by " + CA_CERT);
    }
    if (!validBeyond(certificate, now.plus(RENEW_BEFORE)) || !validBeyond(material.ca().certificate(), now.plus(RENEW_BEFORE))) {
      return new Reading(Optional.of(material), "it expires within " + RENEW_BEFORE.toDays() + " days");
    }
    List<String> uncovered = uncovered(certificate, dnsNames, ipAddresses);
    if (!uncovered.isEmpty()) {
      return new Reading(Optional.of(material), "it does not cover " + String.join(", ", uncovered));
    }
    return new Reading(Optional.of(material), null);
  }

  private boolean write(@Nullable Secret current, Material material) throws IOException {
    Map<String, String> data = new LinkedHashMap<>();
    data.put(CA_CERT, encode(material.ca().certificatePem()));
    data.put(CA_KEY, encode(material.ca().keyPem()));
    data.put(TLS_CERT, encode(material.serving().certificatePem()));
    data.put(TLS_KEY, encode(material.serving().keyPem()));
    SecretBuilder next =
        new SecretBuilder()
            .withNewMetadata()
            .withName(name)
            .withNamespace(namespace)
            .addToLabels("app.kubernetes.io/managed-by", "vgpu-scheduler")
            .endMetadata()
            .withType("kubernetes.io/tls")
            .withData(data);
    try {
      if (current == null) {
        client.secrets().inNamespace(namespace).resource(next.build()).create();
      } else {
        // A type cannot change in place; a foreign Secret of another type is replaced as it is, keeping its type.
        next.withType(current.getType() == null ? "kubernetes.io/tls" : current.getType());
        next.editMetadata().withResourceVersion(current.getMetadata().getResourceVersion()).endMetadata();
        client.secrets().inNamespace(namespace).resource(next.build()).update();
      }
      return true;
    } catch (KubernetesClientException e) {
      if (e.getCode() == HttpURLConnection.HTTP_CONFLICT) {
        return false;
      }
      throw new IOException("cannot write Secret " + where() + ": " + e.getMessage(), e);
    }
  }

  private static List<String> uncovered(X509Certificate certificate, List<String> dnsNames, List<String> ipAddresses) {
    List<String> dns = new ArrayList<>();
    List<String> ips = new ArrayList<>();
    try {
      if (certificate.getSubjectAlternativeNames() != null) {
        for (List<?> entry : certificate.getSubjectAlternativeNames()) {
          int type = (Integer) entry.get(0);
          String value = String.valueOf(entry.get(1));
          if (type == 2) {
            dns.add(value);
          } else if (type == 7) {
            ips.add(normalizedIp(value));
          }
        }
      }
    } catch (CertificateParsingException e) {
      return List.of("any name (" + e.getMessage() + ")");
    }
    List<String> uncovered = new ArrayList<>();
    dnsNames.stream().filter(n -> !dns.contains(n)).forEach(uncovered::add);
    ipAddresses.stream().filter(ip -> !ips.contains(normalizedIp(ip))).forEach(uncovered::add);
    return uncovered;
  }

  private static String normalizedIp(String ip) {
    try {
      return InetAddress.getByName(ip).getHostAddress();
    } catch (IOException e) {
      return ip;
    }
  }

  private static boolean validBeyond(X509Certificate certificate, Instant when) {
    return certificate.getNotAfter().toInstant().isAfter(when);
  }

  private static String decode(Map<String, String> data, String key) {
    return new String(Base64.getDecoder().decode(data.get(key).replaceAll("\\s", "")), StandardCharsets.US_ASCII);
  }

  private static String encode(String pem) {
    return Base64.getEncoder().encodeToString(pem.getBytes(StandardCharsets.US_ASCII));
  }

  private static String names(List<String> dnsNames, List<String> ipAddresses) {
    List<String> all = new ArrayList<>(dnsNames);
    all.addAll(ipAddresses);
    return String.join(", ", all);
  }

  private String where() {
    return namespace + "/" + name;
  }
}
