package io.vgpu.k8s.cli;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.vgpu.k8s.certificates.CertificateIssuer;
import io.vgpu.k8s.certificates.ServingSecret;
import io.vgpu.k8s.certificates.WebhookCaBundle;
import io.vgpu.k8s.yaml.InputException;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code vgpu certificates}: the scheduler pod's certificates, made before its containers start (an
 * init container writing to volumes the containers share). Always kube-scheduler's client
 * certificate for the extender, by a CA made for this pod alone whose key is never written down: the
 * extender trusts that CA ({@code --client-ca-file}), kube-scheduler presents the certificate. With
 * {@code --serving-dir}, also the serving certificate from a Secret (made there by the first pod)
 * and, with {@code --webhook}, its CA in the admission webhook's {@code caBundle}: what cert-manager
 * does when a cluster has it, without hook jobs.
 */
@Command(
    name = "certificates",
    mixinStandardHelpOptions = true,
    description = "Write the scheduler pod's certificates: kube-scheduler's client certificate, and the serving certificate kept in a Secret.")
public final class CertificatesCommand implements Callable<Integer> {
  /** The file names written in each directory. */
  public static final String CA_FILE = "ca.crt";
  /** The certificate's file name. */
  public static final String CERT_FILE = "tls.crt";
  /** The private key's file name. */
  public static final String KEY_FILE = "tls.key";

  private static final Duration CLIENT_VALIDITY = Duration.ofDays(3650);

  @Option(names = "--client-dir", required = true, description = "Where to write kube-scheduler's client certificate (tls.crt, tls.key) and the CA that signed it (ca.crt).")
  Path clientDirectory;

  @Option(names = "--serving-dir", description = "Where to write the serving certificate (tls.crt, tls.key) and its CA (ca.crt) from --secret.")
  @Nullable Path servingDirectory;

  @Option(names = "--secret", description = "The Secret that keeps the serving certificate and its CA (made when missing, unusable or near its end).")
  @Nullable String secret;

  @Option(names = "--namespace", description = "The Secret's namespace (default: the POD_NAMESPACE environment variable).")
  @Nullable String namespace;

  @Option(names = "--dns-name", split = ",", description = "A DNS name the serving certificate must cover (repeatable).")
  List<String> dnsNames = new ArrayList<>();

  @Option(names = "--ip-address", split = ",", description = "An IP address the serving certificate must cover (repeatable).")
  List<String> ipAddresses = new ArrayList<>();

  @Option(names = "--webhook", description = "The MutatingWebhookConfiguration whose webhooks get the serving CA as caBundle.")
  @Nullable String webhook;

  @Option(names = "--webhook-wait", defaultValue = "2m", converter = GoDuration.class, description = "How long to wait for the webhook configuration to exist (default ${DEFAULT-VALUE}).")
  Duration webhookWait;

  @Option(names = "--kubeconfig", description = "Kubeconfig file; without it, the in-cluster configuration.")
  @Nullable Path kubeconfig;

  private final Clock clock;

  /** The command, judging and issuing certificates at the system clock's time. */
  public CertificatesCommand() {
    this(Clock.systemUTC());
  }

  CertificatesCommand(Clock clock) {
    this.clock = clock;
  }

  @Override
  public Integer call() throws Exception {
    if (servingDirectory == null && (secret != null || webhook != null || !dnsNames.isEmpty() || !ipAddresses.isEmpty())) {
      throw new InputException("--secret, --webhook, --dns-name and --ip-address need --serving-dir");
    }
    if (servingDirectory != null && secret == null) {
      throw new InputException("--serving-dir needs --secret");
    }
    if (servingDirectory != null && dnsNames.isEmpty() && ipAddresses.isEmpty()) {
      throw new InputException("--serving-dir needs at least one --dns-name or --ip-address");
    }
    for (String ip : ipAddresses) {
      if (!ip.matches("[0-9.]+|[0-9a-fA-F:]+")) {
        throw new InputException("--ip-address '" + ip + "' is not an IP address");
      }
    }
    Instant now = clock.instant();
    CertificateIssuer.Issued clientCa = CertificateIssuer.authority("vgpu-extender-client-ca", now, CLIENT_VALIDITY);
    CertificateIssuer.Issued client = CertificateIssuer.client(clientCa, "kube-scheduler", now, CLIENT_VALIDITY);
    write(clientDirectory, clientCa.certificatePem(), client);
    if (servingDirectory == null) {
      return 0;
    }
    String ns = namespace != null ? namespace : System.getenv("POD_NAMESPACE");
    if (ns == null || ns.isEmpty()) {
      throw new InputException("--namespace is not given and POD_NAMESPACE is not set");
    }
    try (KubernetesClient kube = ClusterConnection.connect(kubeconfig)) {
      ServingSecret.Material serving;
      try {
        serving = new ServingSecret(kube, ns, secret, clock).ensure(dnsNames, ipAddresses);
      } catch (IOException e) {
        throw new UnavailableException(e.getMessage());
      }
      write(servingDirectory, serving.ca().certificatePem(), serving.serving());
      if (webhook != null) {
        try {
          new WebhookCaBundle(kube, webhook).ensure(serving.ca().certificatePem(), webhookWait, Duration.ofSeconds(2));
        } catch (IOException e) {
          throw new UnavailableException(e.getMessage());
        }
      }
    }
    return 0;
  }

  /** Writes ca.crt, tls.crt and tls.key (owner-only) into {@code directory}, each file whole or not at all. */
  private static void write(Path directory, String caPem, CertificateIssuer.Issued issued) throws IOException {
    try {
      Files.createDirectories(directory);
      replace(directory.resolve(CA_FILE), caPem, "rw-r--r--");
      replace(directory.resolve(CERT_FILE), issued.certificatePem(), "rw-r--r--");
      replace(directory.resolve(KEY_FILE), issued.keyPem(), "rw-------");
    } catch (IOException e) {
      throw new UnavailableException("cannot write certificates to " + directory + ": " + e.getMessage());
    }
  }

  private static void replace(Path file, String content, String permissions) throws IOException {
    Path temporary = Files.createTempFile(file.getParent(), "." + file.getFileName(), ".tmp");
    try {
      Files.setPosixFilePermissions(temporary, PosixFilePermissions.fromString(permissions));
      Files.writeString(temporary, content);
      try {
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } finally {
      Files.deleteIfExists(temporary);
    }
  }
}
