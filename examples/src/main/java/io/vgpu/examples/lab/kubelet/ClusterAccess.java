package io.vgpu.examples.lab.kubelet;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What kubelet gives a pod to reach the API server from inside: the address of the {@code kubernetes}
 * Service as {@code KUBERNETES_SERVICE_HOST}/{@code _PORT}, and in the ServiceAccount volume a token that
 * the API server authenticates as the pod's ServiceAccount, the cluster's CA and the namespace.
 *
 * @param host the API server's address as pods reach it
 * @param port its port
 * @param caCertificate the PEM of the CA that signs the API server's serving certificate; empty when the
 *     server speaks plain HTTP (the lab's stand-in on loopback)
 * @param tokens issues the tokens
 */
public record ClusterAccess(String host, int port, String caCertificate, ServiceAccountTokens tokens) {
  /** Issues a pod's ServiceAccount token, as kubelet asks the API server's TokenRequest for one. */
  @FunctionalInterface
  public interface ServiceAccountTokens {
    /**
     * A token bound to a pod on a node: the API server authenticates it as {@code
     * system:serviceaccount:<namespace>:<name>} with the node-name claim.
     */
    String token(String namespace, String serviceAccount, String node);
  }

  /** The service variables kubelet puts in every container for the {@code kubernetes} Service. */
  public Map<String, String> serviceEnvironment() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("KUBERNETES_SERVICE_HOST", host);
    env.put("KUBERNETES_SERVICE_PORT", Integer.toString(port));
    env.put("KUBERNETES_PORT", "tcp://" + host + ":" + port);
    return env;
  }
}
