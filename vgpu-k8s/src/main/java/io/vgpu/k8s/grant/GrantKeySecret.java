package io.vgpu.k8s.grant;

import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.util.Base64;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Secret that holds the {@link GrantKey}, in the release's namespace, where no tenant can read it:
 * data key {@link #DATA_KEY}, 32 bytes. The scheduler makes it on first start ({@link #ensure}); node
 * agents only read it ({@link #read}). Two schedulers starting at once cannot end up with two keys: a
 * create that finds the Secret made by the other reads the other's key.
 */
public final class GrantKeySecret {
  private static final Logger LOG = LoggerFactory.getLogger(GrantKeySecret.class);

  /** The Secret's data key holding the key's bytes. */
  public static final String DATA_KEY = "grant.key";

  private static final int ATTEMPTS = 5;

  private final KubernetesClient client;
  private final String namespace;
  private final String name;

  /** The Secret {@code namespace/name}. */
  public GrantKeySecret(KubernetesClient client, String namespace, String name) {
    this.client = client;
    this.namespace = namespace;
    this.name = name;
  }

  /**
   * The Secret named by a flag value {@code NAMESPACE/NAME}.
   *
   * @param flag the flag's name, for the error
   * @throws IllegalArgumentException naming the flag and the value when it is not {@code NAMESPACE/NAME}
   */
  public static GrantKeySecret parse(KubernetesClient client, String flag, String value) {
    int slash = value.indexOf('/');
    if (slash <= 0 || slash == value.length() - 1 || value.indexOf('/', slash + 1) >= 0) {
      throw new IllegalArgumentException(flag + ": '" + value + "' is not NAMESPACE/NAME");
    }
    return new GrantKeySecret(client, value.substring(0, slash), value.substring(slash + 1));
  }

  /** {@code namespace/name}. */
  public String where() {
    return namespace + "/" + name;
  }

  /**
   * The key, made and stored first when the Secret does not exist, or replaced when the Secret holds
   * no readable key (a key nobody can use is no key; the replacement is conditional on what was read).
   *
   * @throws IOException when the Secret can be neither read nor written; the message names it
   */
  public GrantKey ensure() throws IOException {
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
      Secret current = get();
      if (current != null) {
        Optional<GrantKey> key = keyOf(current);
        if (key.isPresent()) {
          LOG.info("grant key {} from Secret {}", key.get().fingerprint(), where());
          return key.get();
        }
        LOG.warn("Secret {} holds no readable {}: replacing it with a new key", where(), DATA_KEY);
      }
      GrantKey made = GrantKey.random();
      Secret secret =
          new SecretBuilder()
              .withNewMetadata()
              .withName(name)
              .withNamespace(namespace)
              .withResourceVersion(current == null ? null : current.getMetadata().getResourceVersion())
              .addToLabels("app.kubernetes.io/component", "scheduler")
              .endMetadata()
              .withType("Opaque")
              .withData(Map.of(DATA_KEY, Base64.getEncoder().encodeToString(made.bytes())))
              .build();
      try {
        if (current == null) {
          client.secrets().inNamespace(namespace).resource(secret).create();
        } else {
          client.secrets().inNamespace(namespace).resource(secret).update();
        }
        LOG.info("grant key {} made and stored in Secret {}", made.fingerprint(), where());
        return made;
      } catch (KubernetesClientException e) {
        if (e.getCode() != HttpURLConnection.HTTP_CONFLICT) {
          throw new IOException("cannot write Secret " + where() + ": " + e.getMessage(), e);
        }
        // another scheduler wrote it first: read theirs
      }
    }
    throw new IOException("Secret " + where() + " kept changing while the grant key was made");
  }

  /**
   * The key, when the Secret exists and holds a readable one.
   *
   * @throws IOException when the Secret cannot be read (other than not existing)
   */
  public Optional<GrantKey> read() throws IOException {
    Secret current = get();
    return current == null ? Optional.empty() : keyOf(current);
  }

  private @Nullable Secret get() throws IOException {
    try {
      return client.secrets().inNamespace(namespace).withName(name).get();
    } catch (KubernetesClientException e) {
      throw new IOException("cannot read Secret " + where() + ": " + e.getMessage(), e);
    }
  }

  private static Optional<GrantKey> keyOf(Secret secret) {
    String encoded = secret.getData() == null ? null : secret.getData().get(DATA_KEY);
    if (encoded == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(GrantKey.of(Base64.getDecoder().decode(encoded.strip())));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
