package io.vgpu.k8s.cli;

import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.k8s.yaml.InputException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;

/**
 * The API server connection of the long-running commands: from {@code --kubeconfig}, else the
 * in-cluster configuration, checked once before any informer starts so that an unreachable or
 * misconfigured cluster is one line, not an informer's stack trace.
 */
final class ClusterConnection {
  private ClusterConnection() {}

  /**
   * Connects and asks the API server for its version.
   *
   * @throws InputException when {@code kubeconfig} cannot be read
   * @throws UnavailableException when the API server does not answer
   */
  static KubernetesClient connect(@Nullable Path kubeconfig) throws IOException {
    Config config;
    if (kubeconfig == null) {
      config = Config.autoConfigure(null);
    } else if (!Files.isReadable(kubeconfig)) {
      throw new InputException("--kubeconfig " + kubeconfig + ": no such readable file");
    } else {
      config = Config.fromKubeconfig(Files.readString(kubeconfig));
    }
    KubernetesClient client = new KubernetesClientBuilder().withConfig(config).build();
    try {
      client.getKubernetesVersion();
      return client;
    } catch (KubernetesClientException e) {
      client.close();
      String from = kubeconfig == null ? "the in-cluster configuration (give --kubeconfig outside a cluster)" : "--kubeconfig " + kubeconfig;
      throw new UnavailableException("cannot reach the Kubernetes API server " + config.getMasterUrl() + " from " + from + ": " + rootCause(e));
    }
  }

  private static String rootCause(Throwable e) {
    Throwable cause = e;
    while (cause.getCause() != null && cause.getCause() != cause) {
      cause = cause.getCause();
    }
    String message = cause.getMessage();
    return cause.getClass().getSimpleName() + (message == null || message.isBlank() ? "" : " " + message.strip().replaceAll("\\s+", " "));
  }
}
