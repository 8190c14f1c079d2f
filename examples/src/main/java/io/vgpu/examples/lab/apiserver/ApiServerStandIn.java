package io.vgpu.examples.lab.apiserver;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The lab's API server: fabric8's mock server in CRUD mode on loopback, with {@link LabApiDispatcher}'s
 * additions. Components reach it through a kubeconfig file, as they would reach a real one, each as its
 * own user: the kubeconfig carries a bearer token the server maps to that user ({@link UserInfo}), and
 * a request without a token it issued is answered 401.
 */
public final class ApiServerStandIn implements AutoCloseable {
  /** fabric8's mock server logs every request at INFO through java.util.logging; held strongly so the level sticks. */
  private static final Logger REQUEST_LOG = Logger.getLogger("io.fabric8.mockwebserver");

  static {
    REQUEST_LOG.setLevel(Level.WARNING);
  }

  private final BearerTokens tokens = new BearerTokens();
  private final LabApiDispatcher dispatcher = new LabApiDispatcher(tokens);
  private final MockWebServer http = new MockWebServer();
  private final KubernetesMockServer server;

  private ApiServerStandIn() {
    this.server = new KubernetesMockServer(new Context(), http, new HashMap<>(), dispatcher, false);
  }

  /** Starts a server on a free loopback port; its watches are not compressed, as a real API server's are not. */
  public static ApiServerStandIn start() {
    ApiServerStandIn api = new ApiServerStandIn();
    api.server.init(InetAddress.getLoopbackAddress(), 0);
    UncompressedWatches.apply(api.http);
    return api;
  }

  /** The server's base URL. */
  public String url() {
    return "http://127.0.0.1:" + server.getPort();
  }

  /** The server's loopback port. */
  public int port() {
    return server.getPort();
  }

  /**
   * A ServiceAccount token bound to a pod on {@code node}, as kubelet gets one through TokenRequest for
   * the pod's projected volume: the server authenticates it as {@code
   * system:serviceaccount:<namespace>:<name>} with the node-name claim, as it authenticates any token
   * it issued.
   */
  public String serviceAccountToken(String namespace, String serviceAccount, String node) {
    return tokens.tokenOf(UserInfo.boundServiceAccount(namespace, serviceAccount, node));
  }

  /**
   * Calls the webhooks of a stored {@code MutatingWebhookConfiguration} on every pod creation, its
   * {@code clientConfig.service} reached at {@code serviceBase}.
   */
  public void admission(String configurationName, URI serviceBase) {
    dispatcher.admission(configurationName, serviceBase);
  }

  /**
   * Runs a stand-in's mutating webhook (KAI's) in this process on every pod creation, before the
   * configured webhooks, as the API server would call it.
   */
  public void admission(PodAdmission admission) {
    dispatcher.admission(admission);
  }

  /**
   * Stores objects straight into the server, each as a create through the API would store it (name,
   * UID, resource version, creation time; a duplicate name refused), without an HTTP round trip per
   * object: for filling a large cluster before the components start. Watches already open see them
   * as they see any creation; admission webhooks are not called.
   *
   * @throws IllegalArgumentException naming the first object the store refuses
   */
  public void load(List<? extends HasMetadata> objects) {
    dispatcher.load(objects);
  }

  /** A client of this server as the lab's own administrator ({@link UserInfo#ADMIN}): for its bookkeeping. */
  public KubernetesClient client() {
    return client(UserInfo.ADMIN);
  }

  /** A client of this server as {@code user} (for the lab's own stand-ins and the scenario's users). */
  public KubernetesClient client(UserInfo user) {
    Config config = new ConfigBuilder().withMasterUrl(url()).withNamespace("default").withOauthToken(tokens.tokenOf(user)).withRequestTimeout(30_000)
        .withConnectionTimeout(5_000).build();
    return new KubernetesClientBuilder().withConfig(config).build();
  }

  /**
   * Writes a kubeconfig that points at this server as {@code user}, readable by its owner only (it holds
   * the user's token).
   */
  public Path writeKubeconfig(Path file, UserInfo user) {
    String kubeconfig =
        """
        apiVersion: v1
        kind: Config
        clusters:
          - name: vgpu-lab
            cluster: {server: "%s"}
        users:
          - name: "%s"
            user: {token: "%s"}
        contexts:
          - name: vgpu-lab
            context: {cluster: vgpu-lab, user: "%s", namespace: default}
        current-context: vgpu-lab
        """
            .formatted(url(), user.username(), tokens.tokenOf(user), user.username());
    try {
      Files.deleteIfExists(file);
      Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(file, kubeconfig);
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  /**
   * Stops the server. fabric8's server gives up waiting for its event loop when something holds that
   * loop (a watch's close handler did, before {@link FilteringWatchListener} moved them off it) and says
   * so with an exception; the listener is closed either way, and a lab tearing down must go on to stop
   * its containers and remove its cgroups, so that is not an error here.
   */
  @Override
  public void close() {
    try {
      server.destroy();
    } catch (IllegalStateException e) {
      Logger.getLogger(ApiServerStandIn.class.getName()).fine(() -> "the API server stand-in closed slowly: " + e.getMessage());
    }
  }
}
